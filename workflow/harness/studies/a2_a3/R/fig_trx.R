# Study A3, OLTP_RO with and without transactions (the settings its
# experiment varies, read from the file, words from the factor table): peak
# median QPS (the server's count, without BEGIN/COMMIT) per engine and
# setting, the interval of that cell's median, and each setting's ratio to
# the baseline setting above its bar.
#
# Published marks (published.csv): the study's ratio to the baseline setting,
# placed on the measured baseline.
#
# Usage: Rscript workflow/harness/studies/a2_a3/R/fig_trx.R <oltp_ro_summary.csv> [factors.csv] [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

main <- function(args) {
  if (!length(args) %in% 2:4)
    die("usage: Rscript ", SCRIPT, " <oltp_ro_summary.csv> [factors.csv] [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  if (length(inp$tidy) != 1) fail("expected one summary file, got ", length(inp$tidy))
  d <- read_tidy(inp$tidy)
  p <- plot_settings(d, inp$factors, read_published(inp$published, "a3_trx"))
  n_panels <- nrow(unique(d[, c("engine", "tables")]))
  save_figure(p, args[length(args)], width = min(7, 1.2 + 1.2 * n_panels),
              height = 0.9 + 1.5 * length(unique(d$build)))
}

run_figure(main)
