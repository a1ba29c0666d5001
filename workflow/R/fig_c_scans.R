# Study C2: (a) the full scan SELECT count(*) ... WHERE c1 = 1 per engine
# (EXPLAIN type ALL; PostgreSQL, the legacy stand-in, a Seq Scan) and (b) the
# ALTER TABLE ... ENGINE= conversions of the loaded table, in the study's order
# and back: median seconds per build with the interval of the median (log scale).
#
# Usage: Rscript workflow/R/fig_c_scans.R <test_drive_summary.csv> <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

STEPS_COLUMNS <- c("build", "step", "engine", "metric", "value_median", "value_ci_lo", "value_ci_hi")
ORDER <- c("PostgreSQL (legacy stand-in)", "InnoDB", "MyISAM", "ARCHIVE", "MEMORY", "Aria",
           "ARCHIVE>MyISAM", "MyISAM>InnoDB", "InnoDB>MyISAM", "MyISAM>ARCHIVE")

read_steps <- function(path, step, metric) {
  d <- read_tidy(path, required = STEPS_COLUMNS, numeric = character())
  d <- d[d$step == step & d$metric == metric, , drop = FALSE]
  for (col in c("value_median", "value_ci_lo", "value_ci_hi")) d[[col]] <- suppressWarnings(as.numeric(d[[col]]))
  d[is.finite(d$value_median) & d$value_median > 0, , drop = FALSE]
}

main <- function(args) {
  if (length(args) != 2) die("usage: Rscript ", SCRIPT, " <test_drive_summary.csv> <out.pdf>")
  scan <- read_steps(args[1], "C2", "scan_s")
  conv <- read_steps(args[1], "C2.convert", "alter_s")
  if (nrow(scan) + nrow(conv) == 0) fail(args[1], ": no C2 scan or conversion times")
  scan$panel <- "(a) full scan, count(*) WHERE c1 = 1"
  conv$panel <- "(b) ALTER TABLE ... ENGINE="
  d <- rbind(scan, conv)
  d$engine <- factor(d$engine, levels = ordered_levels(d$engine, ORDER))
  d$value_ci_lo <- ifelse(is.finite(d$value_ci_lo), d$value_ci_lo, d$value_median)
  d$value_ci_hi <- ifelse(is.finite(d$value_ci_hi), d$value_ci_hi, d$value_median)
  dodge <- position_dodge(width = 0.5)
  p <- ggplot(d, aes(engine, value_median, colour = build)) +
    geom_errorbar(aes(ymin = value_ci_lo, ymax = value_ci_hi), width = 0.15, position = dodge) +
    geom_point(size = 1.8, position = dodge) +
    facet_grid(. ~ panel, scales = "free_x", space = "free_x") +
    scale_y_log10("Median seconds (log scale)") +
    scale_x_discrete(name = NULL, labels = function(x) sub(">", "\nto ", sub(" (", "\n(", x, fixed = TRUE), fixed = TRUE)) +
    scale_colour_build(unique(d$build)) +
    theme_artifact()
  save_figure(p, args[2], width = 7, height = 2.6)
}

run_figure(main)
