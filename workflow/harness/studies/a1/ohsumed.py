"""Study A1's real corpus: the OHSUMED collection, fetched from NIST (needs
internet), verified by size and sha256, and parsed into the corpus TSV. See
harness.studies.a1.corpusbase.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tarfile
import tempfile
from pathlib import Path

from harness import atomic
from harness.studies.a1.corpusbase import ENCODING, KEYWORDS, CorpusError, escape, size_sha256, tokens

PARSER_VERSION = "ohsumed-2"  # 2: corpus.json holds the keywords' rows (the count gate's reference)

# The TREC-9 Filtering archive, the only official copy of OHSUMED (NIST).
OHSUMED_ARCHIVE = "t9.filtering.tar.gz"
OHSUMED_URL = "https://trec.nist.gov/data/filtering/t9.filtering.tar.gz"
OHSUMED_SIZE = 139_454_017
OHSUMED_SHA256 = "39184391aab6d080699882dbfd87de4cbcb24cce8a0cffd611debf18914481b0"
OHSUMED_RECORDS = 348_566  # ohsumed.87 (54,710) + ohsumed.88-91 (293,856)
NLM_NOTICE = ("OHSUMED (NLM MEDLINE references 1987-1991) is incomplete and out-of-date; "
              "use it for experiments only, never in a clinical, library or other setting.")


def verify_archive(path: Path, size: int = OHSUMED_SIZE, sha256: str = OHSUMED_SHA256) -> None:
    """Refuse a missing, truncated or corrupted archive before anything parses it."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such archive; fetch it with ohsumed.fetch_ohsumed "
                          f"(needs internet) or copy {OHSUMED_ARCHIVE} there")
    actual_size, actual_sha = size_sha256(path)
    if actual_size != size or actual_sha != sha256:
        raise CorpusError(f"{path}: {actual_size} bytes, sha256 {actual_sha}; expected {size} bytes, "
                          f"sha256 {sha256}: truncated or corrupted, delete it and fetch it again")


_WANT = {w.lower(): w for w in KEYWORDS}  # a token -> the keyword it is
_MEMBER = re.compile(r"(?:^|/)ohsumed\.\d\d(?:-\d\d)?$")
_TAG = re.compile(r"^\.([IUSMTPWA])(?: +(.*))?$")


class _Hashing:
    """A read-only file wrapper that hashes what passes through (the archive is read once)."""

    def __init__(self, f):
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def read(self, n=-1):
        b = self.f.read(n)
        self.h.update(b)
        self.n += len(b)
        return b


def _records(stream):
    """Records of one OHSUMED file: dicts tag -> value. A tag sits alone on its line
    ('.I <seq>' carries its value) and its value is the next line; every record starts
    empty, so one without .W has no abstract (never the previous record's)."""
    rec, tag = None, None
    expect_value = False
    for raw in stream:
        line = raw.decode(ENCODING).rstrip("\r\n")
        if expect_value:
            rec[tag] = line
            expect_value = False
            continue
        m = _TAG.match(line)
        if m and m.group(1) == "I":
            if rec is not None:
                yield rec
            rec, tag = {"I": (m.group(2) or "").strip()}, "I"
        elif m:
            if rec is None:
                raise CorpusError(f"tag .{m.group(1)} before the first .I record; not an OHSUMED file")
            tag = m.group(1)
            if m.group(2):
                rec[tag] = m.group(2)
            else:
                expect_value = True
        elif line.strip() and rec is not None and tag is not None:
            rec[tag] = (rec.get(tag, "") + " " + line).strip()  # a continuation line
    if rec is not None:
        yield rec


def parse_ohsumed(archive: Path, out: Path, *, size: int | None = None, sha256: str | None = None) -> dict:
    """Stream ohsumed.87 .. ohsumed.88-91 out of the tar.gz into out/corpus.tsv +
    corpus.json (content = title + abstract + authors, docid = .I), atomically.
    With `size`/`sha256` the archive is verified first; the real archive (recognised by
    its sha256) must hold exactly 348,566 records."""
    archive = Path(archive)
    if size is not None or sha256 is not None:
        verify_archive(archive, size if size is not None else OHSUMED_SIZE,
                       sha256 if sha256 is not None else OHSUMED_SHA256)
    if not archive.is_file():
        raise CorpusError(f"{archive}: no such archive; fetch it with ohsumed.fetch_ohsumed")
    files, seen = {}, set()
    no_abstract, keyword_rows = 0, dict.fromkeys(KEYWORDS, 0)
    h, nbytes = hashlib.sha256(), 0
    with atomic.staging_dir(Path(out)) as tmp, open(archive, "rb") as raw, \
            open(tmp / "corpus.tsv", "wb") as f:
        src = _Hashing(raw)
        try:
            with tarfile.open(fileobj=src, mode="r|gz") as tar:
                for member in tar:
                    if not member.isfile() or not _MEMBER.search(member.name):
                        continue
                    name = member.name.rsplit("/", 1)[-1]
                    n = 0
                    for rec in _records(tar.extractfile(member)):
                        try:
                            docid = int(rec["I"])
                        except ValueError:
                            raise CorpusError(f"{archive}: {name}: record .I {rec['I']!r} is not a number; "
                                              f"not an OHSUMED file") from None
                        if docid in seen:
                            raise CorpusError(f"{archive}: {name}: .I {docid} appears twice; "
                                              f"the archive is damaged, fetch it again")
                        seen.add(docid)
                        no_abstract += "W" not in rec
                        content = " ".join(rec[k] for k in ("T", "W", "A") if rec.get(k))
                        for tok in _WANT.keys() & tokens(content):
                            keyword_rows[_WANT[tok]] += 1
                        data = f"{docid}\t{escape(content)}\n".encode(ENCODING)
                        h.update(data)
                        nbytes += len(data)
                        f.write(data)
                        n += 1
                    files[name] = n
                while src.read(1 << 20):  # hash the whole archive, also past the tar's end
                    pass
        except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as e:
            raise CorpusError(f"{archive}: cannot read the tar.gz ({type(e).__name__}: {e}); "
                              f"verify it (ohsumed.verify_archive) and fetch it again") from None
        records = sum(files.values())
        if not files:
            raise CorpusError(f"{archive}: holds no ohsumed.* file; is it {OHSUMED_ARCHIVE}?")
        archive_sha = src.h.hexdigest()
        if archive_sha == OHSUMED_SHA256 and records != OHSUMED_RECORDS:
            raise CorpusError(f"{archive}: parsed {records} records, the real OHSUMED has {OHSUMED_RECORDS}; "
                              f"the parser is wrong for this archive, report it")
        meta = {
            "kind": "ohsumed", "parser": PARSER_VERSION, "rows": records, "records": records,
            "bytes": nbytes, "sha256": h.hexdigest(), "encoding": ENCODING,
            "format": "docid<TAB>content, LOAD DATA default escapes",
            "content": "title + abstract + authors (.T .W .A)",
            "archive": {"name": archive.name, "bytes": src.n, "sha256": archive_sha,
                        "official": archive_sha == OHSUMED_SHA256},
            "files": files, "records_without_abstract": no_abstract, "notice": NLM_NOTICE,
            "keywords": keyword_rows, "keywords_by": "rows whose content holds the keyword as a token "
                                                      "(corpusbase.tokens): the count gate's reference",
        }
        (tmp / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def fetch_ohsumed(dest: Path, url: str = OHSUMED_URL, *, size: int = OHSUMED_SIZE,
                  sha256: str = OHSUMED_SHA256, timeout: float = 60) -> Path:
    """Download the archive to `dest` (needs internet) and verify it; a partial or
    wrong download is never left at `dest`. An already verified `dest` is kept."""
    dest = Path(dest)
    if dest.is_file():
        verify_archive(dest, size, sha256)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    print(f"note: {NLM_NOTICE}", file=sys.stderr)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.part-", dir=dest.parent)
    import urllib.error  # here: only a download needs it (a cost per job otherwise)
    import urllib.request
    try:
        with os.fdopen(fd, "wb") as f:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as resp:
                    for chunk in iter(lambda: resp.read(1 << 20), b""):
                        f.write(chunk)
            except (urllib.error.URLError, OSError, ValueError) as e:
                why = getattr(e, "reason", None) or e
                raise CorpusError(f"fetch_ohsumed: cannot download {url} ({why}); on a host without "
                                  f"internet, download it elsewhere and put it at {dest}") from None
        verify_archive(Path(tmp), size, sha256)
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return dest
