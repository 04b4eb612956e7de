"""train_gpt's metrics files (--metrics: one JSON object a line), read as a run writes them or
as the repository keeps them: the committed runs are xz-compressed (<name>.jsonl.xz), so that
the checkout stays small enough for the GPU machine's 64 MiB (scripts/gpu-check.sh)."""
import json
import lzma
import os


def find(path):
    """path, else path + ".xz" where only the compressed copy exists; None if neither."""
    for p in (path, path + ".xz"):
        if os.path.exists(p):
            return p
    return None


def load(path):
    """The rows of the metrics file at path (or path + ".xz")."""
    p = find(path)
    if p is None:
        raise FileNotFoundError(path)
    with (lzma.open(p, "rt") if p.endswith(".xz") else open(p)) as f:
        return [json.loads(line) for line in f if line.strip()]
