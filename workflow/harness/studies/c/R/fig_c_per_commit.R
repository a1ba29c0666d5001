# Study C1 with and without a log flush per commit: InnoDB's insert time divided
# by each other engine's on the same build (log scale), from the relaxed baseline
# (test_drive: InnoDB's log written at commit and synced once a second, the
# PostgreSQL stand-in's synchronous_commit=off) and the per-commit experiment
# (test_drive_per_commit: a flush at every commit, today's servers' default). The
# published ratios (3,000,000 rows, 2005) as labelled black marks. A point's colour
# is the factor columns that differ between the two files (what the servers
# reported), in the factor table's words.
#
# Usage: Rscript workflow/harness/studies/c/R/fig_c_per_commit.R <test_drive_summary.csv> \
#          <test_drive_per_commit_summary.csv> [factors.csv] [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

LEGACY <- "PostgreSQL (legacy stand-in)"
ORDER <- c("MyISAM", "ARCHIVE", LEGACY, "MEMORY", "Aria")
# A steps file's factor columns: those between `variant` and `cores` (its tail column).
step_factors <- function(d) {
  cols <- names(d)
  i <- match("variant", cols)
  j <- match("cores", cols)
  if (is.na(i) || is.na(j) || j <= i + 1) return(character())
  cols[(i + 1):(j - 1)]
}

ratios <- function(path) {
  d <- read_steps(path, "C1", "insert_s")
  attr_cols <- step_factors(d)
  base <- d[d$engine == "InnoDB", c("build", "value_median")]
  if (nrow(base) == 0) fail(path, ": no InnoDB insert time to divide")
  names(base)[2] <- "innodb"
  d <- merge(d[d$engine != "InnoDB", , drop = FALSE], base, by = "build")
  if (nrow(d) == 0) fail(path, ": no engine besides InnoDB")
  d$ratio <- d$innodb / d$value_median
  attr(d, "factors") <- attr_cols
  d
}

main <- function(args) {
  if (!length(args) %in% 2:5)
    die("usage: Rscript ", SCRIPT, " <test_drive_summary.csv> <test_drive_per_commit_summary.csv> ",
        "[factors.csv] [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  parts <- lapply(inp$tidy, ratios)
  if (length(parts) != 2) fail("give the two summaries: test_drive's and test_drive_per_commit's")
  cols <- Reduce(intersect, lapply(parts, function(x) attr(x, "factors")))
  d <- do.call(rbind, lapply(parts, function(x) x[, c("build", "engine", "step", "metric", cols, "ratio")]))
  differ <- cols[vapply(cols, function(x) length(unique(d[[x]])) > 1, logical(1))]
  if (length(differ) == 0) fail("the two summaries run the same settings: nothing to compare")
  d$settings <- setting_label(d, differ, inp$factors)
  levels_x <- ordered_levels(d$engine, ORDER)
  d$engine <- factor(as.character(d$engine), levels = levels_x)
  marks <- read_published(inp$published, "c_per_commit")
  pub <- if (is.null(marks)) NULL else place_published(marks, d, "ratio", "engine")
  p <- ggplot(d, aes(engine, ratio, colour = settings, shape = build)) +
    geom_hline(yintercept = 1, colour = "grey60", linewidth = 0.3) +
    geom_point(size = 2, position = position_dodge(width = 0.5)) +
    scale_y_log10("InnoDB \u00f7 engine,\ninsert time (log)") +
    scale_x_discrete(name = NULL, limits = levels_x, labels = function(x) sub(" (", "\n(", x, fixed = TRUE)) +
    scale_colour_manual(name = NULL, values = c("#1b9e77", "#d95f02", "#7570b3", "#e7298a")) +
    scale_shape_discrete(name = "Build") +
    theme_artifact()
  if (!is.null(pub)) p <- p + geom_published(pub, "engine")
  # a column figure: the legends stacked, one under the other, so none is cut at the edge
  p <- p + guides(colour = guide_legend(ncol = 1, order = 1), shape = guide_legend(nrow = 1, order = 2)) +
    theme(legend.box = "vertical", legend.box.just = "left")
  save_figure(p, args[length(args)], width = 3.4, height = 3.0)
}

run_figure(main)
