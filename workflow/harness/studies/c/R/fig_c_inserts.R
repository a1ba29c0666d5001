# Study C1, inserts from a stored procedure: InnoDB's insert time divided by
# each engine's on the same build (log scale; above 1: the engine is faster; the
# claims' direction, as fig_c_per_commit.R), so the 2005 numbers
# (3,000,000 rows on a Pentium 4) and today's (the profile's row count) compare
# as shapes, not seconds. Points per build with the engine's median interval
# (InnoDB's median divided by it); the published ratios (published.csv, from
# harness.studies.c) as labelled black marks.
# PostgreSQL is the stand-in for the study's legacy commercial database.
#
# Usage: Rscript workflow/harness/studies/c/R/fig_c_inserts.R <test_drive_summary.csv> [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

LEGACY <- "PostgreSQL (legacy stand-in)"
ORDER <- c(LEGACY, "InnoDB", "MyISAM", "ARCHIVE", "MEMORY", "Aria")

main <- function(args) {
  if (!length(args) %in% 2:3) die("usage: Rscript ", SCRIPT, " <test_drive_summary.csv> [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  d <- read_steps(inp$tidy[1], "C1", "insert_s")
  base <- d[d$engine == "InnoDB", c("build", "value_median")]
  if (nrow(base) == 0) fail(inp$tidy[1], ": no InnoDB insert time to normalise to")
  names(base)[2] <- "innodb"
  d <- merge(d, base, by = "build")
  d$ratio <- d$innodb / d$value_median
  d$lo <- ifelse(is.finite(d$value_ci_hi), d$innodb / d$value_ci_hi, d$ratio)
  d$hi <- ifelse(is.finite(d$value_ci_lo), d$innodb / d$value_ci_lo, d$ratio)
  marks <- read_published(inp$published, "c_inserts")
  levels_x <- ordered_levels(d$engine, ORDER)
  d$engine <- factor(as.character(d$engine), levels = levels_x)
  pub <- place_published(marks, d, "ratio", "engine")
  dodge <- position_dodge(width = 0.5)
  p <- ggplot(d, aes(engine, ratio, colour = build)) +
    geom_hline(yintercept = 1, colour = "grey60", linewidth = 0.3) +
    geom_errorbar(aes(ymin = lo, ymax = hi), width = 0.15, position = dodge) +
    geom_point(size = 1.8, position = dodge) +
    geom_published(pub, "engine") +
    scale_y_log10("InnoDB \u00f7 engine,\ninsert time (log)") +
    scale_x_discrete(name = NULL, limits = levels_x, labels = function(x) sub(" (", "\n(", x, fixed = TRUE)) +
    scale_colour_build(unique(d$build)) +
    theme_artifact()
  # a column figure: the builds' legend under the published key, so neither is cut at
  # the edge; several hosts (a build per host, "<build> @ <host>"): in two columns
  p <- p + theme(legend.box = "vertical", legend.box.just = "left")
  if (!is.null(FIGURE_HOST))
    p <- p + guides(colour = guide_legend(ncol = 2, title.position = "top"))
  save_figure(p, args[length(args)], width = 3.4, height = 2.6)
}

run_figure(main)
