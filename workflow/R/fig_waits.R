# Studies A3/B4: Performance Schema wait profile per engine, as the 2012
# study reported "top waits". For each experiment x variant x tables (a
# panel) and build x engine (a bar), the cell with the most users (then the
# most cores) is used, its wait timers summed over repetitions; the bar is
# the share of each event in the lock and synchronisation wait time
# (wait/synch/* and wait/lock/*; I/O waits, e.g. the server waiting on the
# idle client socket, are left out). The N events (default 8) with the
# largest share in any bar are named, the rest is "other". Cells run with
# Performance Schema off record no waits and so are absent. A panel's
# settings are the factors its experiment varies (columns between `variant`
# and `tables`; words from the factor table when given).
#
# Usage: Rscript workflow/R/fig_waits.R [--top N] <waits.csv>... [factors.csv] <out.pdf>
#   (e.g. data/tidy/point_select_waits.csv data/tidy/ps_pfs_waits.csv)

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
REQUIRED <- c("experiment", "build", "engine", "tables", "cores", "users", "rep",
              "event_name", "sum_timer_wait_ps")
NUMERIC <- c("tables", "cores", "users", "rep", "sum_timer_wait_ps")
EVENT_COLOURS <- c("#332288", "#88CCEE", "#44AA99", "#117733", "#999933",
                   "#DDCC77", "#CC6677", "#882255", "#AA4499", "#6699CC",
                   "#661100", "#888888")
EXPERIMENT_NAMES <- c(point_select = "Point-Selects", ps_pfs = "Point-Selects",
                      oltp_ro = "OLTP_RO", simple_ranges = "Simple-Ranges",
                      read_write = "read-write")

short_event <- function(x) sub("^synch/", "", sub("^wait/", "", x))

profile <- function(d, top_n, ftab) {
  d <- d[grepl("^wait/(synch|lock)/", d$event_name), , drop = FALSE]
  if (nrow(d) == 0 || sum(d$sum_timer_wait_ps) <= 0)
    fail("no lock or synchronisation wait time recorded (Performance Schema off in every cell?)")
  d$setting <- ""
  for (e in unique(d$experiment)) {
    i <- d$experiment == e
    d$setting[i] <- setting_label(d[i, , drop = FALSE], varied_factors(d[i, , drop = FALSE]), ftab)
  }
  d$panel_key <- paste(d$experiment, d$variant, d$tables, sep = "|")
  d$bar_key <- paste(d$panel_key, d$build, d$engine, sep = "|")
  # the cell with the most users, then the most cores, per bar
  pick <- do.call(rbind, lapply(split(d, d$bar_key), function(g) {
    u <- max(g$users)
    c <- max(g$cores[g$users == u])
    g[g$users == u & g$cores == c, , drop = FALSE]
  }))
  agg <- stats::aggregate(sum_timer_wait_ps ~ bar_key + panel_key + experiment + variant + setting +
                            tables + build + engine + users + cores + event_name,
                          data = pick, FUN = sum)
  total <- stats::aggregate(sum_timer_wait_ps ~ bar_key, data = agg, FUN = sum)
  agg$share <- agg$sum_timer_wait_ps / total$sum_timer_wait_ps[match(agg$bar_key, total$bar_key)]
  agg <- agg[is.finite(agg$share), , drop = FALSE]
  best <- stats::aggregate(share ~ event_name, data = agg, FUN = max)
  keep <- head(best$event_name[order(-best$share, best$event_name)], top_n)
  agg$event <- ifelse(agg$event_name %in% keep, short_event(agg$event_name), "other")
  agg <- stats::aggregate(share ~ bar_key + panel_key + experiment + variant + setting + tables +
                            build + engine + users + cores + event, data = agg, FUN = sum)
  agg$event <- factor(agg$event, levels = c(short_event(keep), "other")[
    c(short_event(keep), "other") %in% agg$event])
  exp_name <- ifelse(agg$experiment %in% names(EXPERIMENT_NAMES),
                     EXPERIMENT_NAMES[agg$experiment], agg$experiment)
  vt <- gsub(", ", "\n", agg$setting)
  agg$panel <- paste0(exp_name, ifelse(vt == "", "", paste0("\n", vt)), "\n",
                      plural(agg$tables, "table"))
  agg <- agg[order(agg$experiment, agg$variant, agg$tables), , drop = FALSE]
  agg$panel <- factor(agg$panel, levels = unique(agg$panel))
  many_builds <- length(unique(agg$build)) > 1
  agg$bar <- paste0(agg$engine, if (many_builds) paste0("\n", agg$build) else "",
                    "\n", agg$users, "u")
  agg$bar <- factor(agg$bar, levels = unique(agg$bar[order(match(agg$engine, ENGINE_ORDER),
                                                             agg$engine, agg$build)]))
  agg
}

plot_waits <- function(agg) {
  lv <- levels(agg$event)
  cols <- stats::setNames(c(rep_len(EVENT_COLOURS, length(lv) - ("other" %in% lv)),
                            if ("other" %in% lv) "grey85"), lv)
  ggplot(agg, aes(x = bar, y = share, fill = event)) +
    geom_col(width = 0.7, colour = "grey30", linewidth = 0.15) +
    scale_fill_manual("Wait event", values = cols) +
    scale_y_continuous("Share of lock + sync wait time", labels = scales::label_percent(),
                       expand = expansion(mult = c(0, 0.02))) +
    scale_x_discrete(NULL) +
    (if (nlevels(droplevels(agg$panel)) > 1) facet_wrap(~panel, nrow = 1, scales = "free_x")) +
    guides(fill = guide_legend(ncol = 3)) +
    theme_artifact(base_size = 7) +
    theme(legend.key.width = unit(0.8, "lines"), legend.text = element_text(size = 6))
}

main <- function(args) {
  top_n <- 8
  if (length(args) >= 2 && args[1] == "--top") {
    top_n <- suppressWarnings(as.integer(args[2]))
    if (is.na(top_n) || top_n < 1) die("--top needs a positive integer, got ", args[2])
    args <- args[-(1:2)]
  }
  if (length(args) < 2)
    die("usage: Rscript ", SCRIPT, " [--top N] <waits.csv>... [factors.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  d <- read_tidy_all(inp$tidy, required = REQUIRED, numeric = NUMERIC)
  agg <- profile(d, top_n, inp$factors)
  p <- plot_waits(agg)
  n_bars <- length(unique(agg$bar_key))
  save_figure(p, args[length(args)], width = 7, height = 2.9)
}

run_figure(main)
