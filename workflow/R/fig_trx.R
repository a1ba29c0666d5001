# Study A3, OLTP_RO with transactions on (BEGIN/COMMIT around each mix) vs
# off (autocommit): peak median QPS (over users and cores) per engine, with
# the 95% CI of that cell's median and the on/off ratio above each pair;
# columns: tables (rows: builds when there are several).
#
# Usage: Rscript workflow/R/fig_trx.R <oltp_ro_summary.csv> <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

TRX_LEVELS <- c(on = "on (BEGIN/COMMIT)", off = "off (autocommit)")

plot_trx <- function(d) {
  d <- d[d$trx %in% names(TRX_LEVELS), , drop = FALSE]
  if (nrow(d) == 0) fail("no rows with trx on or off")
  pk <- peak_rows(d, c("build", "engine", "tables", "trx"))
  pk$trx_label <- factor(TRX_LEVELS[pk$trx], levels = TRX_LEVELS)
  pk$engine <- factor(pk$engine, levels = ordered_levels(pk$engine, ENGINE_ORDER))
  pk$tables_label <- factor(plural(pk$tables, "table"),
                            levels = plural(sort(unique(pk$tables)), "table"))
  # on/off ratio per engine where both were measured
  key <- c("build", "engine", "tables_label")
  on <- pk[pk$trx == "on", c(key, "qps_median", "qps_ci_hi")]
  off <- pk[pk$trx == "off", c(key, "qps_median", "qps_ci_hi")]
  r <- merge(on, off, by = key, suffixes = c("_on", "_off"))
  r$label <- ratio_label(r$qps_median_on / r$qps_median_off)
  r$y <- pmax(r$qps_ci_hi_on, r$qps_ci_hi_off)
  dodge <- position_dodge(width = 0.8)
  ggplot(pk, aes(x = engine, y = qps_median, fill = engine, alpha = trx_label)) +
    geom_col(position = dodge, width = 0.75, colour = "grey20", linewidth = 0.2) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi, group = trx_label),
                  position = dodge, width = 0.25, linewidth = 0.3, alpha = 1) +
    (if (nrow(r)) geom_text(data = r, aes(x = engine, y = y, label = label),
                            inherit.aes = FALSE, vjust = -0.5, size = 2.4)) +
    scale_fill_engine(guide = "none") +
    scale_alpha_manual("Transactions", values = c(1, 0.35) |> stats::setNames(TRX_LEVELS),
                       drop = TRUE) +
    scale_x_discrete(NULL, labels = engine_axis_labels) +
    scale_y_kqps("Peak median throughput (kQPS)", expand = expansion(mult = c(0, 0.15))) +
    facet_varying(pk, rows = "build", cols = "tables_label") +
    guides(alpha = guide_legend(override.aes = list(fill = "grey30"))) +
    theme_artifact(base_size = 8)
}

main <- function(args) {
  if (length(args) != 2)
    die("usage: Rscript ", SCRIPT, " <oltp_ro_summary.csv> <out.pdf>")
    d <- read_tidy(args[1])
  p <- plot_trx(d)
  save_figure(p, args[2], width = 3.4, height = 0.9 + 1.5 * length(unique(d$build)))
}

run_figure(main)
