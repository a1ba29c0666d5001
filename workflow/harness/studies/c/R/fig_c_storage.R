# Study C3: bytes on disk per engine (the datadir's files) for the study's
# identical rows and for a varied row set of the same size, per build (log
# scale), with ARCHIVE's saving against MyISAM written above its points.
# MEMORY keeps its rows in RAM and has no file: not drawn. The published saving
# (published.csv) is a mark on ARCHIVE at that share of MyISAM's bytes per build.
#
# Usage: Rscript workflow/harness/studies/c/R/fig_c_storage.R <test_drive_summary.csv> [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

STORAGE_COLUMNS <- c("build", "step", "engine", "metric", "value_median")
ORDER <- c("InnoDB", "MyISAM", "ARCHIVE", "Aria")
SETS <- c(identical_datadir_bytes = "identical rows (the study's)", varied_datadir_bytes = "varied rows")

main <- function(args) {
  if (!length(args) %in% 2:3) die("usage: Rscript ", SCRIPT, " <test_drive_summary.csv> [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  d <- read_tidy(inp$tidy[1], required = STORAGE_COLUMNS, numeric = character())
  d <- d[d$step == "C3" & d$metric %in% names(SETS), , drop = FALSE]
  d$value_median <- suppressWarnings(as.numeric(d$value_median))
  d <- d[is.finite(d$value_median) & d$value_median > 0, , drop = FALSE]
  if (nrow(d) == 0) fail(inp$tidy[1], ": no C3 datadir sizes")
  d$rows <- factor(SETS[d$metric], levels = unname(SETS))
  d$kib <- d$value_median / 1024
  d$engine <- factor(d$engine, levels = ordered_levels(d$engine, ORDER))
  key <- function(x) paste(x$build, x$metric)
  arz <- d[d$engine == "ARCHIVE", ]
  myi <- d[d$engine == "MyISAM", ]
  arz$saving <- 1 - arz$value_median / myi$value_median[match(key(arz), key(myi))]
  arz <- arz[is.finite(arz$saving), , drop = FALSE]
  pub <- place_published(read_published(inp$published, "c_storage"), d, "kib", "engine", "build")
  dodge <- position_dodge(width = 0.5)
  p <- ggplot(d, aes(engine, kib, colour = rows, shape = rows)) +
    geom_point(size = 1.8, position = dodge) +
    geom_published(pub, "engine", hjust = 1.3, vjust = 0.5) +   # beside: the savings labels are above their points
    geom_text(data = arz, aes(label = sprintf("-%.0f%%", 100 * saving)), position = dodge,
              vjust = -1, size = 2.3, show.legend = FALSE) +
    facet_varying(d, rows = "build") +
    scale_y_log10("KiB on disk (log scale)", expand = expansion(mult = c(0.05, 0.15))) +
    scale_colour_manual("Rows", values = c("#0072B2", "#D55E00")) +
    scale_shape_manual("Rows", values = c(16, 17)) +
    xlab(NULL) +
    theme_artifact() +
    # a column figure: the legends stacked, the rows' keys one per line, so none is cut
    guides(colour = guide_legend(ncol = 1, order = 1), shape = guide_legend(ncol = 1, order = 1)) +
    theme(legend.box = "vertical", legend.box.just = "left")
  save_figure(p, args[length(args)], width = 3.4, height = 3.4)
}

run_figure(main)
