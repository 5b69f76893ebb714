#!/usr/bin/python3
"""llmc_write.py - writes token .bin files as llm.c and nanoGPT write them.

usage: llmc_write.py KIND PATH SEED DOCS [MAXLEN]
  KIND llmc16: llm.c dev/data/data_common.py write_datafile, GPT-2 (magic
         20240520, version 1, uint16), each document preceded by EOT 50256
       llmc32: the same for LLaMA 3 (magic 20240801, version 7, uint32),
         EOT 128000
       raw16: nanoGPT data/openwebtext/prepare.py (headerless uint16, EOT
         50256 appended to each document)
prints the token count."""
import sys

import numpy as np


def main():
    kind, path, seed, ndocs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    maxlen = int(sys.argv[5]) if len(sys.argv) > 5 else 3000
    rng = np.random.default_rng(seed)
    eot = 128000 if kind == "llmc32" else 50256
    toks = []
    for _ in range(ndocs):
        doc = list(rng.integers(0, 50000, size=int(rng.integers(1, maxlen + 1))))
        toks += ([eot] + doc) if kind.startswith("llmc") else (doc + [eot])
    if kind == "raw16":
        np.array(toks, dtype=np.uint16).tofile(path)
    else:
        header = np.zeros(256, dtype=np.int32)
        header[0], header[1] = (20240520, 1) if kind == "llmc16" else (20240801, 7)
        header[2] = len(toks)
        with open(path, "wb") as f:
            f.write(header.tobytes())
            f.write(np.array(toks, dtype=np.uint16 if kind == "llmc16" else np.uint32).tobytes())
    print(len(toks))


if __name__ == "__main__":
    main()
