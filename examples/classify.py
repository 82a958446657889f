"""Private classification with a BERT sequence-classification head.

The server holds a `BertForSequenceClassification` checkpoint, the client a sequence of token
ids; the client learns the label and the scores. Runs on nectar's tiny random checkpoint (the
real HF format, 3 labels) so that it needs no download; pass a model directory with a
classifier head and a tokenizer to classify text instead:

    python examples/classify.py                       # tiny random BERT, token ids
    python examples/classify.py MODEL_DIR "some text"  # a real classifier
"""

import sys
import tempfile

import nectar


def main() -> None:
    # The tiny model lives in a directory removed when the example ends.
    with tempfile.TemporaryDirectory(prefix="nectar-tiny-bert-") as tmp:
        if len(sys.argv) > 2:
            model_dir, inputs = sys.argv[1], sys.argv[2]
        else:
            model_dir = nectar.write_tiny_model("bert", tmp, seed=5)
            inputs = [1, 12, 7, 33, 2]  # token ids: the tiny model has no tokenizer
        with nectar.Server(model_dir) as server:
            client = nectar.Client("127.0.0.1", server.port, model_dir=model_dir)
            (label, scores), metrics = client.classify(inputs, return_metrics=True)
        print(f"label {label}, scores {[round(float(s), 4) for s in scores]}")
        print(f"{metrics['seconds']:.2f} s, {metrics['bytes_total'] / 1e6:.1f} MB; per operator:")
        for row in sorted(metrics["ops"], key=lambda r: -r["seconds"]):
            print(f"  {row['op']:<12} {row['protocol']:<12} {row['calls']:>3} calls {row['seconds']:.3f} s")


if __name__ == "__main__":
    main()
