# Study A3, Point-Selects as the original author plotted it: throughput per
# second over time while the number of users steps up. For each engine x
# tables (repetition 1), the per-second series of the cells are laid end to
# end on one time axis, ordered by cores then users; each step is labelled
# with its users count (cores/users when several core counts were measured).
#
# Usage: Rscript workflow/harness/studies/a2_a3/R/fig_timeseries.R <intervals.csv>... <out.pdf>
#   (e.g. data/tidy/point_select_intervals.csv)

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
REQUIRED <- c("experiment", "build", "engine", "tables", "cores", "users",
              "rep", "time", "qps")
NUMERIC <- c("tables", "cores", "users", "rep", "time", "qps")

# One series = build x engine x tables x variant; its cells are concatenated.
lay_out <- function(d) {
  d$series <- paste(d$build, d$engine, d$tables, d$variant, sep = "|")
  # repetition 1 where it exists, else each cell's lowest repetition
  cell <- paste(d$series, d$cores, d$users, sep = "|")
  first_rep <- ave(d$rep, cell, FUN = function(r) if (any(r == 1)) 1 else min(r))
  d <- d[d$rep == first_rep, , drop = FALSE]
  d <- d[order(d$series, d$cores, d$users, d$time), , drop = FALSE]
  many_cores <- length(unique(d$cores)) > 1
  steps <- list()
  out <- list()
  for (s in unique(d$series)) {
    g <- d[d$series == s, , drop = FALSE]
    offset <- 0
    for (key in unique(paste(g$cores, g$users, sep = "|"))) {
      seg <- g[paste(g$cores, g$users, sep = "|") == key, , drop = FALSE]
      seg$t <- offset + seg$time
      out[[length(out) + 1]] <- seg
      len <- max(seg$time, 1)
      steps[[length(steps) + 1]] <- data.frame(
        series = s, build = seg$build[1], engine = seg$engine[1],
        tables = seg$tables[1], variant = seg$variant[1],
        start = offset, mid = offset + len / 2 + 0.5,
        label = if (many_cores) paste0(plural(seg$cores[1], "core"), ", ", seg$users[1], "u")
                else plural(seg$users[1], "user"),
        stringsAsFactors = FALSE)
      offset <- offset + len
    }
  }
  list(points = do.call(rbind, out), steps = do.call(rbind, steps), many_cores = many_cores)
}

panel_labels <- function(d) {
  lab <- paste0(d$engine, ", ", plural(d$tables, "table"))
  if (length(unique(d$variant)) > 1) lab <- paste0(lab, ", ", d$variant)
  lab
}

plot_ts <- function(l) {
  pts <- l$points
  st <- l$steps
  pts$panel <- panel_labels(pts)
  st$panel <- panel_labels(st)
  levels <- unique(pts[order(match(pts$engine, ENGINE_ORDER), pts$engine, pts$tables, pts$variant), "panel"])
  pts$panel <- factor(pts$panel, levels = levels)
  st$panel <- factor(st$panel, levels = levels)
  many_builds <- length(unique(pts$build)) > 1
  # step labels once per panel (the first build's layout)
  lab <- st[!duplicated(paste(st$panel, st$start)), , drop = FALSE]
  bounds <- lab[lab$start > 0, , drop = FALSE]
  ymax <- max(pts$qps) * 1.12
  # one line per cell: the boundary between two cells was never measured
  pts$cell <- paste(pts$series, pts$cores, pts$users, sep = "|")
  n_per_cell <- table(pts$cell)
  lined <- pts[pts$cell %in% names(n_per_cell)[n_per_cell > 1], , drop = FALSE]
  p <- ggplot(pts, aes(x = t, y = qps, colour = engine, group = cell)) +
    (if (nrow(bounds)) geom_vline(data = bounds, aes(xintercept = start + 0.5),
                                  linetype = "dashed", colour = "grey60", linewidth = 0.3)) +
    (if (nrow(lined)) geom_line(data = lined, mapping = if (many_builds) aes(linetype = build) else aes(),
                                linewidth = 0.4)) +
    geom_point(size = 0.5) +
    geom_text(data = lab, aes(x = mid, y = ymax, label = label), inherit.aes = FALSE,
              size = 2.3, vjust = 1, colour = "grey25") +
    scale_x_continuous("Time (s), cells laid end to end", expand = expansion(mult = 0.01)) +
    scale_y_kqps("Throughput per second (kQPS)", limits = c(0, ymax),
                 expand = expansion(mult = c(0, 0.02))) +
    scale_colour_engine(breaks = ordered_levels(pts$engine, ENGINE_ORDER)) +
    (if (nlevels(droplevels(pts$panel)) > 1) facet_wrap(~panel, ncol = 2, scales = "free_x")) +
    theme_artifact(base_size = 8)
  if (many_builds) p <- p + scale_linetype_discrete("Build")
  p
}

main <- function(args) {
  if (length(args) < 2)
    die("usage: Rscript ", SCRIPT, " <intervals.csv>... <out.pdf>")
    d <- read_tidy_all(args[-length(args)], required = REQUIRED, numeric = NUMERIC)
  l <- lay_out(d)
  p <- plot_ts(l)
  n_panels <- length(unique(l$points$panel <- panel_labels(l$points)))
  save_figure(p, args[length(args)], width = 7,
              height = 0.7 + 0.95 * ceiling(n_panels / 2))
}

run_figure(main)
