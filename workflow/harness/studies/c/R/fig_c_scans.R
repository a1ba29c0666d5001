# Study C2: (a) the full scan SELECT count(*) ... WHERE c1 = 1 per engine
# (EXPLAIN type ALL; PostgreSQL, the legacy stand-in, a Seq Scan) and (b) the
# ALTER TABLE ... ENGINE= conversions of the loaded table, in the study's order
# and back: median seconds per build with the interval of the median (log scale).
# Published marks (published.csv): the study's scan-time ratios placed on this host's
# InnoDB scan, median over builds; the conversions have none (the study gave two times of
# different conversions, never their ratio).
#
# Usage: Rscript workflow/harness/studies/c/R/fig_c_scans.R <test_drive_summary.csv> [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

ORDER <- c("PostgreSQL (legacy stand-in)", "InnoDB", "MyISAM", "ARCHIVE", "MEMORY", "Aria",
           "ARCHIVE>MyISAM", "MyISAM>InnoDB", "InnoDB>MyISAM", "MyISAM>ARCHIVE")

main <- function(args) {
  if (!length(args) %in% 2:3) die("usage: Rscript ", SCRIPT, " <test_drive_summary.csv> [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  scan <- read_steps(inp$tidy[1], "C2", "scan_s", must = FALSE)
  conv <- read_steps(inp$tidy[1], "C2.convert", "alter_s", must = FALSE)
  if (nrow(scan) + nrow(conv) == 0) fail(inp$tidy[1], ": no C2 scan or conversion times")
  scan$panel <- "(a) full scan, count(*) WHERE c1 = 1"
  conv$panel <- "(b) ALTER TABLE ... ENGINE="
  d <- rbind(scan, conv)
  d$engine <- factor(d$engine, levels = ordered_levels(d$engine, ORDER))
  d$value_ci_lo <- ifelse(is.finite(d$value_ci_lo), d$value_ci_lo, d$value_median)
  d$value_ci_hi <- ifelse(is.finite(d$value_ci_hi), d$value_ci_hi, d$value_median)
  pub <- place_published(read_published(inp$published, "c_scans"), d, "value_median", "engine", "panel")
  dodge <- position_dodge(width = 0.5)
  p <- ggplot(d, aes(engine, value_median, colour = build)) +
    geom_errorbar(aes(ymin = value_ci_lo, ymax = value_ci_hi), width = 0.15, position = dodge) +
    geom_point(size = 1.8, position = dodge) +
    geom_published(pub, "engine") +
    facet_grid(. ~ panel, scales = "free_x", space = "free_x") +
    scale_y_log10("Median seconds (log scale)", expand = expansion(mult = c(0.05, 0.12))) +
    scale_x_discrete(name = NULL, labels = function(x) sub(">", "\nto ", sub(" (", "\n(", x, fixed = TRUE), fixed = TRUE)) +
    scale_colour_build(unique(d$build)) +
    theme_artifact()
  save_figure(p, args[length(args)], width = 7, height = 2.6)
}

run_figure(main)
