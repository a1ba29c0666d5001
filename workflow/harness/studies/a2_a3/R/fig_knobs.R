# Study A3, server settings on Point-Selects: one panel per experiment of the
# inputs that varies a factor (e.g. the InnoDB spin-wait delay, the read-only
# stand-in, MyISAM key caches, MDL hash instances); which factor, its words,
# value order and baseline come from the file's columns and the factor table,
# never from this script. Median QPS (the server's count) with the interval
# of the median per setting, one point per users value (shape), colour
# engine (points, never lines: the settings are categories); above each setting, the ratio of its peak (over users and cores)
# to the baseline setting's peak. Published marks (published.csv): the study's
# ratio to the baseline setting, placed on the measured baseline's peak.
#
# Usage: Rscript workflow/harness/studies/a2_a3/R/fig_knobs.R <summary.csv>... [factors.csv] [published.csv] <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

panel <- function(d, vf, ftab, title, marks = NULL) {
  d$levels <- levels_key(d, vf)
  d <- d[setting_order(d, vf, ftab, baseline_first = FALSE), , drop = FALSE]
  d$setting <- setting_label(d, vf, ftab, sep = "\n")
  prefix <- paste0(short_words(vf[1], ftab), " ")  # the title names a lone factor
  if (length(vf) == 1)
    d$setting <- ifelse(startsWith(d$setting, prefix), substring(d$setting, nchar(prefix) + 1), d$setting)
  d$setting <- factor(d$setting, levels = unique(d$setting))
  d$base <- at_baseline(d, vf, ftab)
  d$engine <- factor(d$engine, levels = ordered_levels(d$engine, ENGINE_ORDER))
  d$users_f <- factor(d$users, levels = sort(unique(d$users)))
  d$group <- interaction(d$engine, d$build, d$users_f, d$tables, d$cores, drop = TRUE)
  pk <- peak_rows(d, c("build", "engine", "setting"))
  base <- pk[pk$base, c("build", "engine", "qps_median")]
  names(base)[3] <- "ref_qps"
  pk <- merge(pk, base, by = c("build", "engine"), all.x = TRUE)
  top <- stats::aggregate(qps_ci_hi ~ build + engine + setting, data = d, FUN = max)
  pk <- merge(pk, top, by = c("build", "engine", "setting"), suffixes = c("", "_top"))
  pk$label <- ifelse(pk$base, "base", ratio_label(pk$qps_median / pk$ref_qps))
  pub <- place_published(marks, pk, "qps_median", "setting", "build")
  pk <- with_published_label(pk, pub, c("setting", "build"))
  many_users <- length(levels(d$users_f)) > 1
  many_engines <- length(unique(d$engine)) > 1
  dodge <- position_dodge(width = if (many_users || many_engines) 0.5 else 0)
  ggplot(d, aes(x = setting, y = qps_median, colour = engine, group = group)) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), position = dodge,
                  width = 0.25, linewidth = 0.3) +
    geom_point(aes(shape = users_f), position = dodge, size = 1.6) +
    geom_text(data = pk, aes(x = setting, y = label_y(pk, qps_ci_hi_top), label = label),
              inherit.aes = FALSE, vjust = -0.6, size = 2.3, lineheight = 0.85) +
    geom_published(pub, "setting", text = FALSE) +
    scale_colour_engine(breaks = levels(d$engine),
                        guide = if (many_engines) "legend" else "none") +
    scale_shape_discrete("Users", guide = if (many_users) "legend" else "none") +
    scale_x_discrete(NULL) +
    scale_y_kqps(expand = expansion(mult = c(0, if (is.null(pub)) 0.14 else 0.5))) +
    expand_limits(y = 0) +
    facet_varying(d, rows = "build") +
    labs(title = title) +
    theme_artifact(base_size = 8) +
    theme(plot.title = element_text(size = 8))
}

main <- function(args) {
  if (length(args) < 2)
    die("usage: Rscript ", SCRIPT, " <summary.csv>... [factors.csv] [published.csv] <out.pdf>")
  inp <- split_inputs(args[-length(args)])
  d <- read_tidy_all(inp$tidy)
  marks <- read_published(inp$published, "a3_knobs")
  exps <- Filter(function(e) length(varied_factors(d[d$experiment == e, , drop = FALSE])) > 0,
                 unique(d$experiment))
  # a panel title wraps to its panel's width (7 in shared by the panels, ~12 characters
  # of the 8 pt title per inch), so no title is cut
  width <- max(12, floor(12 * 7 / max(1, length(exps))) - 2)
  plots <- list()
  for (e in exps) {
    de <- d[d$experiment == e, , drop = FALSE]
    vf <- varied_factors(de)
    words <- paste(vapply(vf, short_words, character(1), ftab = inp$factors), collapse = " x ")
    title <- wrap_label(paste0("(", letters[length(plots) + 1], ") ", words), width)
    plots[[length(plots) + 1]] <- panel(de, vf, inp$factors, title, marks)
  }
  if (length(plots) == 0) fail("no input varies a factor: nothing to compare")
  g <- arrange_panels(plots, widths = rep(1, length(plots)))
  save_figure(g, args[length(args)], width = 7,
              height = 0.8 + 1.4 * length(unique(d$build)))
}

run_figure(main)
