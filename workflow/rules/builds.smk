# Pinned builds (config/builds.lock.yaml): fetch + verify, then one empty
# system datadir per build that every dataset starts from.


rule fetch_build:
    output:
        directory("resources/builds/{build}"),
    log:
        "logs/fetch_build/{build}.log",
    shell:
        "{HARNESS} fetch-build --name {wildcards.build} --out {output} 2>&1 | tee {log}"


rule bootstrap_template:
    input:
        rules.fetch_build.output,
    output:
        directory("resources/templates/{build}"),
    log:
        "logs/bootstrap_template/{build}.log",
    shell:
        "{HARNESS} bootstrap --name {wildcards.build} --build-dir {input} --out {output} 2>&1 | tee {log}"
