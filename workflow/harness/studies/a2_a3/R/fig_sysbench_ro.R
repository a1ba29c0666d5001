# Studies A2/A3, the sysbench read-only matrix: median QPS (the server's
# count; order-statistic interval of the median) against users for OLTP_RO,
# Simple-Ranges and Point-Selects; rows workload x setting x tables (a setting
# row for each value of a factor the workload's experiment varies, words
# from the factor table), columns cores (one core count: the rows wrap into a
# grid of four columns), colour engine. Absent cells are
# absent, never zero. Published marks (published.csv): a study's engine ratio at
# the marked engine's peak in a panel, placed on the other engine's peak there
# (median over builds).
#
# Usage: Rscript workflow/harness/studies/a2_a3/R/fig_sysbench_ro.R <summary.csv>... [factors.csv] [published.csv] <out.pdf>
#   (any of point_select_summary.csv, oltp_ro_summary.csv,
#    simple_ranges_summary.csv; the workload column says which is which)

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
WORKLOADS <- c(oltp_ro = "OLTP_RO", simple_ranges = "Simple-Ranges",
               point_select = "Point-Selects")

prepare <- function(d, ftab) {
  if (!"workload" %in% names(d)) fail("missing column: workload")
  unknown <- setdiff(unique(d$workload), names(WORKLOADS))
  if (length(unknown))
    fail("unexpected workload(s) ", paste(unknown, collapse = ", "),
         "; expected ", paste(names(WORKLOADS), collapse = ", "))
  d$label <- WORKLOADS[d$workload]
  d$levels <- ""
  for (w in unique(d$workload)) {  # a setting per value of what that workload varies
    i <- d$workload == w
    vf <- varied_factors(d[i, , drop = FALSE])
    d$levels[i] <- levels_key(d[i, , drop = FALSE], vf)
    s <- setting_label(d[i, , drop = FALSE], vf, ftab)
    d$label[i] <- ifelse(s == "", d$label[i], paste0(d$label[i], ", ", s))
  }
  d$row <- paste0(gsub(", ", "\n", d$label), "\n", plural(d$tables, "table"))
  order <- unique(d[order(match(d$workload, names(WORKLOADS)), d$tables, d$label), "row"])
  d$row <- factor(d$row, levels = order)
  d$col <- factor(plural(d$cores, "core"),
                  levels = plural(sort(unique(d$cores)), "core"))
  d$engine <- factor(d$engine, levels = ordered_levels(d$engine, ENGINE_ORDER))
  d$series <- interaction(d$engine, d$build, d$variant, drop = TRUE)
  d$stability <- factor(ifelse(d$unstable, "unstable (high CV)", "stable"),
                        levels = c("stable", "unstable (high CV)"))
  d
}

# With one core count the rows' panels wrap into a grid of up to WRAP_COLUMNS
# columns (each panel titled by its row) instead of one tall column.
WRAP_COLUMNS <- 4
wrapped <- function(d) nlevels(d$col) == 1 && nlevels(d$row) > 2

plot_ro <- function(d, marks = NULL) {
  many_builds <- length(unique(d$build)) > 1
  users <- sort(unique(d$users))
  # a line only where a series has more than one users value
  n_per_series <- table(interaction(d$series, d$row, d$col, drop = TRUE))
  lined <- d[as.character(interaction(d$series, d$row, d$col, drop = TRUE)) %in%
               names(n_per_series)[n_per_series > 1], , drop = FALSE]
  line_aes <- if (many_builds) aes(linetype = build) else aes()
  pub <- place_published(marks, peak_rows(d, c("build", "engine", "row", "col")), "qps_median", "users",
                         c("row", "col"))
  p <- ggplot(d, aes(x = users, y = qps_median, colour = engine, group = series)) +
    (if (nrow(lined)) geom_line(data = lined, mapping = line_aes, linewidth = 0.4)) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.12, linewidth = 0.3) +
    geom_point(aes(shape = stability), size = 1.4, stroke = 0.5, fill = "white") +
    geom_published(pub, "users", beside = users) +
    scale_x_continuous("Users (sysbench threads)", trans = "log2",
                       breaks = users, labels = users) +
    scale_y_kqps(expand = expansion(mult = c(0, if (is.null(pub)) 0.08 else 0.2))) +
    expand_limits(y = 0, x = range(users) * c(0.75, 1.33)) +
    scale_colour_engine(breaks = levels(d$engine)) +
    scale_shape_manual(NULL, values = c("stable" = 16, "unstable (high CV)" = 21),
                       drop = TRUE,
                       guide = if (any(d$unstable)) "legend" else "none") +
    (if (wrapped(d)) facet_wrap(~row, ncol = WRAP_COLUMNS, scales = "free_y")
     else facet_varying(d, rows = "row", cols = "col", scales = "free_y")) +
    guides(colour = guide_legend(order = 1), shape = guide_legend(order = 3)) +
    theme_artifact(base_size = 8) +
    # the keys (engines, stability, published) on two lines: on one they run off the page
    theme(strip.text.y = element_text(angle = 0, hjust = 0), legend.box = "vertical")
  if (many_builds) p <- p + scale_linetype_discrete("Build", guide = guide_legend(order = 2))
  p
}

main <- function(args) {
  if (length(args) < 2)
    die("usage: Rscript ", SCRIPT, " <summary.csv>... [factors.csv] [published.csv] <out.pdf>")
  out <- args[length(args)]
  inp <- split_inputs(args[-length(args)])
  d <- prepare(read_tidy_all(inp$tidy, required = c(SUMMARY_COLUMNS, "workload")), inp$factors)
  p <- plot_ro(d, read_published(inp$published, "a2_sysbench_ro"))
  height <- if (wrapped(d)) 1.0 + 1.35 * ceiling(nlevels(d$row) / WRAP_COLUMNS)
            else 0.9 + 0.75 * nlevels(d$row)
  save_figure(p, out, width = 7, height = height)
}

run_figure(main)
