# Study B, the MEMORY engine. Up to three panels in one PDF, each the peak
# median QPS (the server's count; over users and cores) per engine with the
# interval of that cell's median, as the claims compare them: each workload
# at the most tables measured and at the baseline of every factor its
# experiment varies (the factor table's; the panel title says which):
#   (a) Simple-Ranges, log scale: MEMORY (HASH index) vs MEMORY-BTREE, with
#       InnoDB and MyISAM for reference; BTREE/HASH ratio annotated (B1);
#   (b) OLTP_RO: every engine, ratio to InnoDB above each bar (B2, "~8%");
#   (c) OLTP read-write: every engine, ratio to InnoDB (B3).
# A panel whose input is not given is left out; absent engines are absent.
# Published marks (published.csv): the study's ratio to InnoDB (B2's +8%),
# placed on InnoDB's measured peak.
#
# Usage: Rscript workflow/harness/studies/b/R/fig_memory.R <summary.csv>... [factors.csv] [published.csv] <out.pdf>
#   (any of simple_ranges_summary.csv, simple_ranges_scale_summary.csv,
#    oltp_ro_summary.csv, read_write_summary.csv; recognised by their workload
#    column, one panel per experiment)

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
WIDTH_IN <- 7
PANELS <- c(simple_ranges = "Simple-Ranges (log scale)",
            oltp_ro = "OLTP_RO (read-only)",
            oltp_rw = "OLTP read-write")

peaks <- function(d) {
  pk <- peak_rows(d, c("build", "engine"))
  pk$engine <- factor(pk$engine, levels = ordered_levels(pk$engine, ENGINE_ORDER))
  pk
}

ratio_to <- function(pk, ref) {
  base <- pk[pk$engine == ref, c("build", "qps_median")]
  names(base)[2] <- "ref_qps"
  out <- merge(pk, base, by = "build", all.x = TRUE)
  out$label <- ifelse(out$engine == ref, "", ratio_label(out$qps_median / out$ref_qps))
  out
}

by_build <- function(pk) {
  if (length(unique(pk$build)) > 1) facet_grid(build ~ .) else NULL
}

panel_ranges <- function(d, title) {
  pk <- peaks(d)
  hash <- pk[pk$engine == "MEMORY", c("build", "qps_median", "qps_ci_hi")]
  btree <- pk[pk$engine == "MEMORY-BTREE", c("build", "qps_median", "qps_ci_hi")]
  gap <- merge(hash, btree, by = "build", suffixes = c("_hash", "_btree"))
  if (nrow(gap)) {
    gap$label <- paste0("BTREE/HASH\n", ratio_label(gap$qps_median_btree / gap$qps_median_hash))
    gap$y <- pmax(gap$qps_ci_hi_hash, gap$qps_ci_hi_btree)
    gap$x <- mean(match(c("MEMORY", "MEMORY-BTREE"), levels(pk$engine)))
  }
  lo <- min(pk$qps_ci_lo[pk$qps_ci_lo > 0], pk$qps_median[pk$qps_median > 0], Inf)
  if (!is.finite(lo)) fail("Simple-Ranges: no positive QPS to draw on a log scale")
  hi <- max(pk$qps_ci_hi, pk$qps_median)
  ggplot(pk, aes(x = engine, y = pmax(qps_median, lo / 2), colour = engine)) +
    geom_linerange(aes(ymin = lo / 4, ymax = pmax(qps_median, lo / 2)), linewidth = 2.2, alpha = 0.35) +
    geom_errorbar(aes(ymin = pmax(qps_ci_lo, lo / 2), ymax = qps_ci_hi), width = 0.25, linewidth = 0.3) +
    geom_point(size = 1.8) +
    (if (nrow(gap)) geom_text(data = gap, aes(x = x, y = y, label = label), inherit.aes = FALSE,
                              vjust = -0.3, size = 2.3, lineheight = 0.9)) +
    scale_colour_engine(guide = "none") +
    scale_x_discrete(NULL, labels = engine_axis_labels) +
    scale_y_log10("Peak median (kQPS, log)", labels = kqps_labels,
                  expand = expansion(mult = c(0, 0.05))) +
    coord_cartesian(ylim = c(lo / 4, hi * 6)) +
    by_build(pk) +
    labs(title = title) +
    theme_artifact(base_size = 8) +
    theme(plot.title.position = "plot")   # the title over the whole panel, axis included
}

panel_bars <- function(d, title, marks = NULL) {
  pk <- ratio_to(peaks(d), "InnoDB")
  pub <- place_published(marks, pk, "qps_median", "engine", "build")
  pk <- with_published_label(pk, pub, c("engine", "build"))   # one text per bar: never overlapping
  ggplot(pk, aes(x = engine, y = qps_median, fill = engine)) +
    geom_col(width = 0.7, colour = "grey20", linewidth = 0.2) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.25, linewidth = 0.3) +
    geom_text(aes(y = label_y(pk, pmax(qps_ci_hi, qps_median)), label = label), vjust = -0.5, size = 2.3,
              lineheight = 0.85) +
    geom_published(pub, "engine", text = FALSE) +
    scale_fill_engine(guide = "none") +
    scale_x_discrete(NULL, labels = engine_axis_labels) +
    scale_y_kqps("Peak median (kQPS)", expand = expansion(mult = c(0, if (is.null(pub)) 0.14 else 0.5))) +
    by_build(pk) +
    labs(title = title) +
    theme_artifact(base_size = 8) +
    theme(plot.title.position = "plot")   # the title over the whole panel, axis included
}

as_compared <- function(dw, ftab) {
  vf <- varied_factors(dw)
  dw <- dw[at_baseline(dw, vf, ftab), , drop = FALSE]
  dw <- dw[dw$tables == max(dw$tables), , drop = FALSE]
  s <- setting_label(dw[1, , drop = FALSE], vf, ftab)
  list(d = dw, note = paste0(plural(dw$tables[1], "table"), if (nchar(s)) paste0(", ", s) else ""))
}

main <- function(args) {
  if (length(args) < 2)
    die("usage: Rscript ", SCRIPT, " <summary.csv>... [factors.csv] [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  d <- read_tidy_all(inp$tidy, required = c(SUMMARY_COLUMNS, "workload"))
  marks <- read_published(inp$published, "b_memory")
  unknown <- setdiff(unique(d$workload), names(PANELS))
  if (length(unknown))
    fail("unexpected workload(s) ", paste(unknown, collapse = ", "),
         "; expected ", paste(names(PANELS), collapse = ", "))
  panels <- list()
  for (w in names(PANELS)) {
    exps <- unique(d$experiment[d$workload == w])
    for (e in exps) {  # a panel per experiment (e.g. Simple-Ranges at two table sizes)
      dw <- d[d$workload == w & d$experiment == e, , drop = FALSE]
      cmp <- as_compared(dw, inp$factors)
      name <- if (length(exps) > 1) paste0(PANELS[[w]], ", ", e) else PANELS[[w]]
      panels[[length(panels) + 1]] <- list(w = w, d = cmp$d, name = name, note = cmp$note,
                                           width = 0.6 + length(unique(cmp$d$engine)))
    }
  }
  widths <- vapply(panels, function(x) x$width, 0)
  # more than three panels (Simple-Ranges at two table sizes, ...): two a row, so that
  # neither the engines under a panel nor its title run into the next
  ncol <- if (length(panels) > 3) 2 else length(panels)
  row_width <- max(vapply(split(widths, (seq_along(widths) - 1) %/% ncol), sum, 0))
  plots <- list()
  for (i in seq_along(panels)) {
    x <- panels[[i]]
    # the title wrapped to its panel's width (WIDTH_IN over its row's panels; about 6 pt a
    # character of the 9.6 pt title), so a long one ("..., simple_ranges_scale") is never cut
    chars <- floor(72 * WIDTH_IN * x$width / row_width / 6)
    title <- paste(wrap_label(paste0("(", letters[i], ") ", x$name), chars), wrap_label(x$note, chars), sep = "\n")
    plots[[i]] <- if (x$w == "simple_ranges") panel_ranges(x$d, title) else panel_bars(x$d, title, marks)
  }
  g <- arrange_panels(plots, ncol = ncol, widths = widths)
  save_figure(g, args[length(args)], width = WIDTH_IN,
              height = (0.5 + 1.8 * length(unique(d$build))) * ceiling(length(plots) / ncol))
}

run_figure(main)
