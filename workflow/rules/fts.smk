# Study A1: the fulltext datasets the profile uses, as tidy tables -- the
# 30-keyword count gate (data/tidy/fts_gate.csv: the paper's count table) and
# the load (data/tidy/fts_load.csv: load and index-build times, tokenizer
# settings). Reads only each dataset's dataset.json (harness.studies.a1.fts_export).


def fts_datasets():
    """The fulltext dataset directories of the profile's cells (when replotting,
    only those that exist)."""
    out = [p for p in hplan.datasets_needed(CFG, LOCK) if "/fulltext/" in p]
    return [p for p in out if os.path.isdir(p)] if REPLOT else out


rule fts_dataset_table:
    input:
        fts_datasets(),
    output:
        gate="data/tidy/fts_gate.csv",
        load="data/tidy/fts_load.csv",
    log:
        "logs/tidy/fts_datasets.log",
    shell:
        "{PY} -m harness.studies.a1.fts_export --datasets {input} --gate-out {output.gate} --load-out {output.load}"
        " > {log} 2>&1 || (tail -3 {log}; exit 1)"
