# Study C1, inserts from a stored procedure: each engine's insert time
# divided by InnoDB's on the same build (log scale), so the 2005 numbers
# (3,000,000 rows on a Pentium 4) and today's (the profile's row count) compare
# as shapes, not seconds. Points per build with the engine's median interval
# (divided by InnoDB's median); the published ratios as labelled black marks.
# PostgreSQL is the stand-in for the study's legacy commercial database.
#
# Usage: Rscript workflow/R/fig_c_inserts.R <test_drive_summary.csv> <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

STEPS_COLUMNS <- c("build", "step", "engine", "metric", "value_median", "value_ci_lo", "value_ci_hi")
LEGACY <- "PostgreSQL (legacy stand-in)"
# docs/studies.md, Study C1: seconds for 3,000,000 inserts
PUBLISHED <- c("PostgreSQL (legacy stand-in)" = 183.01, InnoDB = 184.75, MyISAM = 109.88, ARCHIVE = 73.83)
ORDER <- c(LEGACY, "InnoDB", "MyISAM", "ARCHIVE", "MEMORY", "Aria")

read_steps <- function(path, step, metric) {
  d <- read_tidy(path, required = STEPS_COLUMNS, numeric = character())
  d <- d[d$step == step & d$metric == metric, , drop = FALSE]
  if (nrow(d) == 0) fail(path, ": no rows of step ", step, " metric ", metric)
  for (col in c("value_median", "value_ci_lo", "value_ci_hi")) d[[col]] <- suppressWarnings(as.numeric(d[[col]]))
  d[is.finite(d$value_median) & d$value_median > 0, , drop = FALSE]
}

main <- function(args) {
  if (length(args) != 2) die("usage: Rscript ", SCRIPT, " <test_drive_summary.csv> <out.pdf>")
  d <- read_steps(args[1], "C1", "insert_s")
  base <- d[d$engine == "InnoDB", c("build", "value_median")]
  if (nrow(base) == 0) fail(args[1], ": no InnoDB insert time to normalise to")
  names(base)[2] <- "innodb"
  d <- merge(d, base, by = "build")
  d$ratio <- d$value_median / d$innodb
  d$lo <- ifelse(is.finite(d$value_ci_lo), d$value_ci_lo / d$innodb, d$ratio)
  d$hi <- ifelse(is.finite(d$value_ci_hi), d$value_ci_hi / d$innodb, d$ratio)
  pub <- data.frame(engine = names(PUBLISHED), ratio = unname(PUBLISHED / PUBLISHED[["InnoDB"]]))
  levels_x <- ordered_levels(c(d$engine, pub$engine), ORDER)
  d$engine <- factor(as.character(d$engine), levels = levels_x)
  pub$engine <- factor(pub$engine, levels = levels_x)
  dodge <- position_dodge(width = 0.5)
  p <- ggplot(d, aes(engine, ratio, colour = build)) +
    geom_hline(yintercept = 1, colour = "grey60", linewidth = 0.3) +
    geom_point(data = pub, aes(engine, ratio), inherit.aes = FALSE, shape = 95, size = 9, colour = "black") +
    geom_text(data = pub, aes(engine, ratio), label = "2005", inherit.aes = FALSE,
              size = 2.2, vjust = -0.7, colour = "black") +
    geom_errorbar(aes(ymin = lo, ymax = hi), width = 0.15, position = dodge) +
    geom_point(size = 1.8, position = dodge) +
    scale_y_log10("Insert time \u00f7 InnoDB's (log scale)") +
    scale_x_discrete(name = NULL, limits = levels_x, labels = function(x) sub(" (", "\n(", x, fixed = TRUE)) +
    scale_colour_build(unique(d$build)) +
    theme_artifact()
  save_figure(p, args[2], width = 3.4, height = 2.6)
}

run_figure(main)
