# Build versus build (the modern form of the study's 5.6-rc1 vs rc2): A3
# Point-Selects median QPS vs users, one line per build (points alone when a
# single users value was measured), facets engine x tables (columns: cores),
# each only when it varies. A build that cannot run a cell (no such engine,
# an option it lacks) is listed as absent in its panel, never drawn as zero.
#
# Usage: Rscript workflow/harness/studies/a2_a3/R/fig_builds.R <build_compare_summary.csv> [unsupported.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
suppressPackageStartupMessages(library(ggplot2))

main <- function(args) {
  if (!length(args) %in% 2:3) fail("usage: fig_builds.R <build_compare_summary.csv> [unsupported.csv] <out.pdf>")
  out <- args[length(args)]
  d <- read_tidy(args[1])
  absent <- data.frame(experiment = character(), build = character(), engine = character())
  if (length(args) == 3) {
    if (!file.exists(args[2])) fail("input file not found: ", args[2])
    absent <- as.data.frame(data.table::fread(args[2], colClasses = "character"))
    absent <- absent[absent$experiment == d$experiment[1], , drop = FALSE]
  }
  builds <- sort(unique(c(d$build, absent$build)))
  d$panel <- paste0(d$engine, ", ", plural(d$tables, "table"))
  d$cores_lab <- factor(plural(d$cores, "core"), levels = unique(plural(sort(unique(d$cores)), "core")))
  p <- ggplot(d, aes(users, qps_median, colour = build, group = build)) +
    geom_linerange(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), linewidth = 0.3) +
    (if (nrow(lined <- lined_rows(d, c("build", "panel", "cores_lab"), "users")))
      geom_line(data = lined, linewidth = 0.4)) +
    geom_point(aes(shape = unstable), size = 1.4) +
    scale_shape_manual(values = c(`FALSE` = 16, `TRUE` = 1), labels = c("stable", "unstable (high CV)"),
                       name = NULL, drop = FALSE) +
    scale_x_continuous(trans = "log2", breaks = sort(unique(d$users))) +
    scale_y_kqps(limits = c(0, NA)) +
    scale_colour_build(builds) +
    facet_varying(d, rows = "panel", cols = "cores_lab") +
    labs(x = "Users (sysbench threads)") +
    theme_artifact()
  if (nrow(absent) > 0) {
    by_engine <- tapply(absent$build, absent$engine, function(b) paste(sort(unique(b)), collapse = ", "))
    notes <- merge(unique(d[, c("engine", "panel", "cores_lab")]),
                   data.frame(engine = names(by_engine), note = paste("absent:", by_engine)))
    if (nrow(notes) > 0)
      p <- p + geom_text(data = notes, aes(x = min(d$users), y = 0, label = note), inherit.aes = FALSE,
                         hjust = 0, vjust = -0.5, size = 2.2, colour = "grey30")
  }
  rows <- length(unique(d$panel))
  # the paper prints it at most 0.3 of the text height (about 3.1 in): drawn no higher, so its type
  # is printed at the size it is set
  save_figure(p, out, width = 7, height = min(3.1, 1.0 + 1.1 * rows))
}

run_figure(main)
