"""The studies the paper reproduces, one module each (a plug-in).

A study module declares, with nothing else to register:

    NAME, TITLE        its key and its title in the paper
    SECTION            its paper section, paper/sections/<NAME>.tex (main.tex
                       \\input's them in this registry's order: generated/sections.tex)
    EXPERIMENTS        {experiment: (studies, what it measures)} it reads (design table)
    CLAIMS             its claims (harness.claims kinds), in the order of the table
    FIGURES            {figure: dict(script, flag, inputs, extra)} (harness.report.figures)
    SETUP              what the study used, for the generated deviations table:
                       a list of (aspect, the study's value, key) -- key names what the
                       artifact did instead (harness.report.tables._artifact: hardware,
                       cores, users, table_size, duration, repetitions, builds, load, metric)
    macros(ctx, rows)  its numbers quoted in the text: [(macro name, LaTeX)]

Adding a study: write studies/<name>.py and paper/sections/<name>.tex, then add
one line below.
"""
from . import a2_a3, b, c

STUDIES = {m.NAME: m for m in (
    a2_a3,
    b,
    c,
)}
