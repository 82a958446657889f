"""Private greedy generation with a GPT-2 model, both parties in one process.

`nectar.run_local` runs the server (weights) and the client (prompt) as two threads over a
simulated LAN link, with a progress bar. Runs on nectar's tiny random GPT-2 (real HF format, no
tokenizer: token ids in, token ids out); pass a GPT-2 / LLaMA directory with a tokenizer.json
to generate text:

    python examples/generate.py                          # tiny random GPT-2
    python examples/generate.py MODEL_DIR "Once upon a"  # a real model
"""

import sys
import tempfile

import nectar


def main() -> None:
    # The tiny model lives in a directory removed when the example ends.
    with tempfile.TemporaryDirectory(prefix="nectar-tiny-gpt2-") as tmp:
        if len(sys.argv) > 2:
            model_dir, prompt = sys.argv[1], sys.argv[2]
        else:
            model_dir = nectar.write_tiny_model("gpt2", tmp, seed=5)
            prompt = [3, 14, 15, 9]
        out, metrics = nectar.run_local(model_dir, [prompt], net="lan", max_new_tokens=4, return_metrics=True, progress=True)
        print(f"prompt {prompt!r} -> {out[0]!r}")
        print(
            f"{metrics['seconds']:.2f} s over a simulated LAN, "
            f"{metrics['bytes_client_to_server'] / 1e6:.1f} MB client->server, "
            f"{metrics['bytes_server_to_client'] / 1e6:.1f} MB server->client, {metrics['rounds']} rounds"
        )


if __name__ == "__main__":
    main()
