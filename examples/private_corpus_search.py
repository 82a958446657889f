"""Search a private corpus with private embeddings.

The client holds a few private documents and a query; the server holds all-MiniLM-L6-v2
(fetched by `nectar fetch-model minilm` / `make model`). The server never sees the texts, the
client never sees the weights; the client ranks its documents by cosine similarity locally.
The corpus is embedded as one batch: one private forward pass for all documents (attention
per document), so the protocol's round trips are paid once.

    python examples/private_corpus_search.py "where can I watch a match?"
"""

import sys

import numpy as np

import nectar

CORPUS = [
    "The stadium opens its gates two hours before kick-off.",
    "Our clinic is closed on public holidays.",
    "Preheat the oven to 200 degrees before baking the bread.",
]


def main() -> None:
    query = sys.argv[1] if len(sys.argv) > 1 else "Where can I watch a football game?"
    with nectar.Server(nectar.default_model_dir()) as server:
        client = nectar.Client("127.0.0.1", server.port)
        docs, metrics = client.embed(CORPUS, batch_size=len(CORPUS), return_metrics=True, progress=True)
        q = client.embed([query])[0]
    scores = docs @ q  # unit vectors: dot product = cosine
    print(f"query: {query!r}")
    for i in np.argsort(-scores):
        print(f"  {scores[i]:+.3f}  {CORPUS[i]}")
    print(
        f"corpus: {metrics['seconds']:.1f} s, {metrics['bytes_total'] / 1e6:.0f} MB exchanged, "
        f"{metrics['rounds']} rounds (suite {metrics['suite']})"
    )


if __name__ == "__main__":
    main()
