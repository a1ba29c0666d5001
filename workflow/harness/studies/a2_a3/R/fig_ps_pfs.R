# Study A3, Point-Selects with the settings its experiment varies (prepared
# statements x Performance Schema; read from the file, words from the factor
# table): peak median QPS (the server's count) per engine and setting, the
# interval of that cell's median, and the ratio to the baseline setting (the
# study's default) above each bar. Absent settings are absent.
#
# Published marks (published.csv): the study's ratio to the baseline setting,
# placed on the measured baseline.
#
# Usage: Rscript workflow/harness/studies/a2_a3/R/fig_ps_pfs.R <ps_pfs_summary.csv> [factors.csv] [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

main <- function(args) {
  if (!length(args) %in% 2:4)
    die("usage: Rscript ", SCRIPT, " <ps_pfs_summary.csv> [factors.csv] [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  if (length(inp$tidy) != 1) fail("expected one summary file, got ", length(inp$tidy))
  d <- read_tidy(inp$tidy)
  p <- plot_settings(d, inp$factors, read_published(inp$published, "a3_ps_pfs"))
  save_figure(p, args[length(args)], width = 7, height = 0.9 + 1.6 * length(unique(d$build)))
}

run_figure(main)
