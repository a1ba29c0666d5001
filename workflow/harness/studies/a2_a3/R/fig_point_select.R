# Study A3, Point-Selects: median QPS vs users, one line per engine,
# facets tables x cores where they vary (points alone for a single users value).
# Published marks (published.csv): the study's engine ratio, at the marked
# engine's peak in a panel, placed on the other engine's peak there.
#
# Usage: Rscript workflow/harness/studies/a2_a3/R/fig_point_select.R <point_select_summary.csv> [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
REQUIRED <- c(SUMMARY_COLUMNS, "study", "workload", "n", "qps_cv")

read_summary <- function(path) {
  d <- read_tidy(path, required = REQUIRED)
  d$unstable <- factor(ifelse(d$unstable, "unstable (high CV)", "stable"),
                       levels = c("stable", "unstable (high CV)"))
  d
}

plot_point_select <- function(d, marks = NULL) {
  builds <- sort(unique(d$build))
  many_builds <- length(builds) > 1
  d$series <- if (many_builds) paste(d$engine, d$build) else d$engine
  users <- sort(unique(d$users))
  d$tables_lab <- factor(plural(d$tables, "table"), levels = plural(sort(unique(d$tables)), "table"))
  d$cores_lab <- factor(plural(d$cores, "core"), levels = plural(sort(unique(d$cores)), "core"))

  pub <- place_published(marks, peak_rows(d, c("build", "engine", "tables", "cores")), "qps_median",
                         "users", c("tables_lab", "cores_lab"))
  aes_line <- if (many_builds) aes(linetype = build) else aes()
  p <- ggplot(d, aes(x = users, y = qps_median, colour = engine, group = series)) +
    (if (nrow(lined <- lined_rows(d, c("series", "tables", "cores"), "users")))
      geom_line(data = lined, mapping = aes_line, linewidth = 0.4)) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.15,
                  linewidth = 0.3) +
    geom_point(aes(shape = unstable), size = 1.4, stroke = 0.5, fill = "white") +
    geom_published(pub, "users", beside = users) +
    scale_x_continuous("Users (sysbench threads)", trans = "log2",
                       breaks = users, labels = users) +
    scale_y_kqps(expand = expansion(mult = c(0, if (is.null(pub)) 0.06 else 0.2))) +
    expand_limits(y = 0, x = range(users) * c(0.75, 1.33)) +
    scale_colour_engine() +
    scale_shape_manual(NULL, values = c("stable" = 16, "unstable (high CV)" = 21),
                       drop = TRUE,
                       guide = if (any(d$unstable != "stable")) "legend" else "none") +
    facet_varying(d, rows = "tables_lab", cols = "cores_lab") +
    guides(colour = guide_legend(order = 1), shape = guide_legend(order = 3)) +
    theme_artifact(base_size = 9)
  if (many_builds) p <- p + scale_linetype_discrete("Build", guide = guide_legend(order = 2))
  p
}

main <- function(args) {
  if (!length(args) %in% 2:3)
    die("usage: Rscript fig_point_select.R <point_select_summary.csv> [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  d <- read_summary(inp$tidy[1])
  p <- plot_point_select(d, read_published(inp$published, "a3_point_select"))
  n_rows <- length(unique(d$tables))
  save_figure(p, args[length(args)], width = 7, height = 0.9 + 1.1 * n_rows)
}

run_figure(main)
