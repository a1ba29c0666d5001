# Pinned builds (config/builds.lock.yaml): fetch + verify, then one empty
# system datadir per build that every dataset starts from.


rule fetch_build:
    output:
        directory("resources/builds/{build}"),
    log:
        "logs/fetch_build/{build}.log",
    benchmark:
        "benchmarks/fetch_build/{build}.tsv"
    params:
        provider=CFG["build_provider"],
    shell:
        "{HARNESS} fetch-build --name {wildcards.build} --provider {params.provider} --out {output}"
        " > {log} 2>&1 || (tail -3 {log}; exit 1)"


rule bootstrap_template:
    # through the profile's backend (a container under docker), as every server is
    input:
        rules.fetch_build.output,
    output:
        directory("resources/templates/{build}"),
    log:
        "logs/bootstrap_template/{build}.log",
    benchmark:
        "benchmarks/bootstrap_template/{build}.tsv"
    params:
        backend=CFG["backend"],
        mechanism=CFG["placement"]["mechanism"],
    shell:
        "{HARNESS} bootstrap --name {wildcards.build} --build-dir {input} --out {output}"
        " --backend {params.backend} --mechanism {params.mechanism} > {log} 2>&1 || (tail -3 {log}; exit 1)"


# The packaged build and its official release, as the lock pairs them (official_of).
_PACKAGED, _OFFICIAL = hbuilds.official_pair(LOCK)


rule official_check:
    # Is the packaged build (npm's MySQL 5.6.24) the official binary? Compared where the
    # official tarball was fetched (needs internet); else the paper says so.
    input:
        # a replot does not fetch the build: without it here, the lock's mysqld hash stands in
        build=lambda wc: [] if REPLOT and not os.path.exists(f"resources/builds/{_PACKAGED}")
        else [f"resources/builds/{_PACKAGED}"],
        official=lambda wc: (
            [f"resources/builds/{_OFFICIAL}"]
            if os.path.exists(f"resources/builds/{_OFFICIAL}")
            else []
        ),
    output:
        "data/tidy/official_check.json",
    log:
        "logs/official_check.log",
    benchmark:
        "benchmarks/official_check.tsv"
    shell:
        "{HARNESS} official-check --name {_PACKAGED} --build-dir resources/builds/{_PACKAGED}"
        " --official {_OFFICIAL} --official-dir resources/builds/{_OFFICIAL}"
        " --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"
