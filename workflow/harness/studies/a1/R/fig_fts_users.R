# Study A1, full-text search: median QPS vs users, InnoDB vs MyISAM, one
# panel per core count (a row per build when the input has several), with the
# interval of each cell's median. Factor columns (between `variant` and
# `tables`) that vary become the line type. Published marks (published.csv): the
# study's InnoDB/MyISAM factor on a core count, at InnoDB's peak in that panel.
#
# Usage: Rscript workflow/harness/studies/a1/R/fig_fts_users.R <fts_summary.csv> [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

plot_fts_users <- function(d, marks = NULL) {
  vf <- varied_factors(d)
  d$setting <- setting_label(d, vf, NULL)
  d$series <- paste(d$build, d$engine, d$setting)
  d$engine <- factor(d$engine, levels = ordered_levels(d$engine, ENGINE_ORDER))
  users <- sort(unique(d$users))
  pub <- place_published(marks, peak_rows(d, c("build", "engine", "setting", "cores")), "qps_median",
                         "users", c("build", "cores"))
  ggplot(d, aes(x = users, y = qps_median, colour = engine, group = series)) +
    (if (length(users) > 1) geom_line(if (length(vf)) aes(linetype = setting) else aes(), linewidth = 0.4)) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.15, linewidth = 0.3) +
    geom_point(aes(shape = unstable), size = 1.4, stroke = 0.5, fill = "white") +
    geom_published(pub, "users", beside = users) +
    scale_x_continuous("Users (sysbench threads)", trans = "log2", breaks = users, labels = users) +
    scale_y_kqps(expand = expansion(mult = c(0, if (is.null(pub)) 0.06 else 0.2))) +
    expand_limits(y = 0, x = range(users) * c(0.75, 1.33)) +
    scale_colour_engine() +
    scale_shape_manual(NULL, values = c("FALSE" = 16, "TRUE" = 21),
                       labels = c("FALSE" = "stable", "TRUE" = "unstable (high CV)"),
                       guide = if (any(d$unstable == "TRUE")) "legend" else "none") +
    facet_varying(d, rows = "build", cols = "cores",
                  labeller = labeller(cores = function(x) plural(x, "core"))) +
    labs(linetype = NULL) +
    theme_artifact(base_size = 8)
}

main <- function(args) {
  if (!length(args) %in% 2:3) die("usage: Rscript ", SCRIPT, " <fts_summary.csv> [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  d <- read_tidy(inp$tidy[1])
  d$unstable <- factor(as.character(d$unstable), levels = c("FALSE", "TRUE"))
  p <- plot_fts_users(d, read_published(inp$published, "a1_fts_users"))
  save_figure(p, args[length(args)], width = 7, height = 1.2 + 1.3 * length(unique(d$build)))
}

run_figure(main)
