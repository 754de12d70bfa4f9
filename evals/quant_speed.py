"""Prefill and generation speed of GGUF files, measured alternately in one process (A B A B ...)
so the machine's drift falls on every file alike. Dev tool, not part of the product.

    python evals/quant_speed.py FILE.gguf [FILE.gguf ...] --rounds 3 --prompt 300 --gen 24

``--build NAME=DIR`` (repeated) compares builds of llama-cpp-python instead: each measurement
runs in a new process with ``DIR`` (a ``pip install --target`` of a wheel built with other
CMAKE_ARGS; empty: the installed one) first on its path, builds and files alternating::

    python evals/quant_speed.py FILE.gguf --build portable= --build avx512=/tmp/avx512-lib --rounds 4

Prefill: ``--prompt`` fresh tokens (cache cleared); generation: ``--gen`` greedy tokens after it.
Prints each file's best and median tokens/s per phase, and the load average at the start.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

TEXT = (
    "Caroline told Melanie about the support group she went to on Friday, and Melanie "
    "talked about painting a sunrise with her kids at the lake last summer. "
)


def measure(path: str, prompt: int, gen: int, threads: int) -> tuple[float, float]:
    import llama_cpp

    llama = llama_cpp.Llama(model_path=path, n_ctx=2048, n_threads=threads, verbose=False, seed=0)
    tokens = llama.tokenize((TEXT * (prompt // 20 + 2)).encode(), add_bos=True)[:prompt]
    no_eos = {int(llama.token_eos()): -100.0}
    llama.create_completion(prompt=tokens[:16], max_tokens=1)  # warm the weights into memory
    prefills = []
    for _ in range(2):  # the first may still fault the mapped weights in
        llama.reset()
        started = time.perf_counter()
        llama.create_completion(prompt=tokens, max_tokens=1, temperature=0.0)
        prefills.append(time.perf_counter() - started)
    prefill = min(prefills)
    llama.reset()
    started = time.perf_counter()
    llama.create_completion(prompt=tokens, max_tokens=gen, temperature=0.0, logit_bias=no_eos)
    total = time.perf_counter() - started
    del llama
    gc.collect()
    return prompt / prefill, (gen - 1) / max(total - prefill, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=300)
    parser.add_argument("--gen", type=int, default=24)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--build", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one file, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.files[0], args.prompt, args.gen, args.threads)))
        return
    print(f"load average at start: {os.getloadavg()}; threads {args.threads}")
    builds = dict(b.split("=", 1) for b in args.build)
    runs = [(name, f) for name in builds for f in args.files] if builds else [("", f) for f in args.files]
    seen: dict[str, list[tuple[float, float]]] = {f"{n} {os.path.basename(f)}".strip(): [] for n, f in runs}
    for _ in range(args.rounds):
        for name, f in runs:
            key = f"{name} {os.path.basename(f)}".strip()
            if not builds:
                seen[key].append(measure(f, args.prompt, args.gen, args.threads))
                continue
            path = os.pathsep.join(p for p in (builds[name], os.environ.get("PYTHONPATH", "")) if p)
            child = [sys.executable, __file__, f, "--one", "--prompt", str(args.prompt), "--gen", str(args.gen)]
            done = subprocess.run(
                [*child, "--threads", str(args.threads)],
                env={**os.environ, "PYTHONPATH": path},
                capture_output=True,
                text=True,
                check=True,
            )
            pre, gen = json.loads(done.stdout.strip().splitlines()[-1])
            seen[key].append((pre, gen))
    for f, rows in seen.items():
        pre = [r[0] for r in rows]
        gen = [r[1] for r in rows]
        print(
            f"{f}: prefill tok/s best {max(pre):.1f} median {statistics.median(pre):.1f}; "
            f"generation tok/s best {max(gen):.1f} median {statistics.median(gen):.1f}"
        )


if __name__ == "__main__":
    main()
