# Study A1's own rules (the Snakefile includes every study's rules.smk):
# - corpus: the FTS corpus a fulltext dataset loads (harness.studies.a1.corpusbase),
#   a generated stand-in or the parsed OHSUMED archive;
# - fts_dataset_table: the fulltext datasets the profile uses, as tidy tables --
#   the 30-keyword count gate (data/tidy/fts_gate.csv: the paper's count table)
#   and the load (data/tidy/fts_load.csv: load and index-build times, tokenizer
#   settings). Reads only each dataset's dataset.json (harness.studies.a1.fts_export).

import shlex


def _corpus_spec(key):
    for spec in EXPERIMENTS.values():
        if spec.get("dataset") == "fulltext" and hplan.corpus_path(spec).endswith("/" + key):
            return spec["corpus"]
    return {}


def _ohsumed_args(spec):
    """The OHSUMED archive (downloaded when not given) and the size and sha256 it must have
    (NIST's unless the profile's corpus.size/sha256 name another copy: checked in the config)."""
    opts = {k: spec[k] for k in ("archive", "size", "sha256") if k in spec}
    return "--source ohsumed" + "".join(f" --{k} {shlex.quote(str(v))}" for k, v in opts.items())


rule corpus:
    output:
        directory("data/corpus/{corpus}"),
    log:
        "logs/corpus/{corpus}.log",
    benchmark:
        "benchmarks/corpus/{corpus}.tsv"
    params:
        args=lambda wc: (
            _ohsumed_args(_corpus_spec(wc.corpus))
            if wc.corpus == "ohsumed"
            else "--source standin --rows {} --seed {}".format(*wc.corpus.split("-n")[1].split("-s"))
        ),
    shell:
        "{HARNESS} corpus {params.args} --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


def fts_datasets():
    """The fulltext dataset directories of the profile's cells (when replotting,
    only those that exist; an imported host's records: host_data)."""
    out = [host_data(p) for p in hplan.datasets_needed(CFG, LOCK) if "/fulltext/" in p]
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
        "{HARNESS} fts-export --datasets {input} --gate-out {output.gate} --load-out {output.load}"
        " > {log} 2>&1 || (tail -3 {log}; exit 1)"


rule fts_counts_table:
    """The keyword-count table of the paper (harness.studies.a1.fts_counts)."""
    input:
        gate="data/tidy/fts_gate.csv",
        load="data/tidy/fts_load.csv",
        code="workflow/harness/studies/a1/fts_counts.py",
    output:
        "paper/generated/fts_counts.tex",
    log:
        "logs/tidy/fts_counts.log",
    shell:
        "{HARNESS} fts-counts --gate {input.gate} --load {input.load} --out {output}"
        " > {log} 2>&1 || (tail -3 {log}; exit 1)"


# on a cluster (profiles/slurm) these run on the submit host, as the Snakefile's localrules
localrules: corpus, fts_dataset_table, fts_counts_table
