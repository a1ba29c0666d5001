# Study A1, full-text search: each engine's best median QPS (over users) per
# core count -- where scaling stops. A point per measured core count; a line
# joins an engine's points only when it was measured on two core counts or
# more (one core count is a point, never a line). A row per build when the
# input has several. Published marks (published.csv): the study's InnoDB/MyISAM
# factor on a core count, placed on MyISAM's best on those cores.
#
# Usage: Rscript workflow/harness/studies/a1/R/fig_fts_cores.R <fts_summary.csv> [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

best_per_cores <- function(d) {
  vf <- varied_factors(d)
  d$setting <- setting_label(d, vf, NULL)
  pk <- peak_rows(d, c("build", "engine", "setting", "cores"))
  pk$series <- paste(pk$build, pk$engine, pk$setting)
  n <- table(pk$series)
  pk$joined <- as.vector(n[pk$series]) >= 2
  pk$engine <- factor(pk$engine, levels = ordered_levels(pk$engine, ENGINE_ORDER))
  pk
}

plot_fts_cores <- function(pk, marks = NULL) {
  cores <- sort(unique(pk$cores))
  pub <- place_published(marks, pk, "qps_median", "cores", "build")
  many_builds <- length(unique(pk$build)) > 1
  ggplot(pk, aes(x = cores, y = qps_median, colour = engine, group = series)) +
    geom_line(data = pk[pk$joined, , drop = FALSE], linewidth = 0.4) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.1, linewidth = 0.3) +
    geom_point(size = 1.6) +
    geom_text(aes(label = paste0(users, "u")), vjust = -0.9, size = 2.2, show.legend = FALSE) +
    geom_published(pub, "cores", beside = cores) +
    scale_x_continuous("Cores given to mysqld", trans = "log2", breaks = cores, labels = cores) +
    scale_y_kqps("Best median QPS over\nusers (thousands)", expand = expansion(mult = c(0, 0.15))) +
    expand_limits(y = 0, x = range(cores) * c(0.75, 1.33)) +
    scale_colour_engine() +
    (if (many_builds) facet_wrap(~build, ncol = 2)) +
    labs(caption = "label: the users of the best cell") +
    theme_artifact(base_size = 8)
}

main <- function(args) {
  if (!length(args) %in% 2:3) die("usage: Rscript ", SCRIPT, " <fts_summary.csv> [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  pk <- best_per_cores(read_tidy(inp$tidy[1]))
  rows <- ceiling(length(unique(pk$build)) / 2)  # a column wide, as printed; two builds a row
  save_figure(plot_fts_cores(pk, read_published(inp$published, "a1_fts_cores")), args[length(args)],
              width = 3.3, height = if (rows > 1) 1.1 + 1.6 * rows else 2.2)
}

run_figure(main)
