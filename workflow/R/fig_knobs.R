# Study A3, server knobs on Point-Selects, one panel each (left out when its
# input is not given): (a) innodb_spin_wait_delay values, (b)
# innodb_read_only off/on, (c) MyISAM key cache shared vs one per table.
# Median QPS with its 95% CI per setting, one point per users value (shape),
# colour engine; above each setting, the ratio of its peak (over users and
# cores) to the reference setting's peak (spin 96 -- the study's baseline --,
# read-only off, shared cache).
#
# Usage: Rscript workflow/R/fig_knobs.R <summary.csv>... <out.pdf>
#   (any of spin_wait_summary.csv, read_only_summary.csv,
#    key_cache_summary.csv; recognised by which factor column is set)

# factor column -> (title, preferred order of values, reference value)
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
KNOBS <- list(
  spin_wait_delay  = list(title = "innodb_spin_wait_delay", ref = "96"),
  innodb_read_only = list(title = "innodb_read_only", order = c("off", "on"), ref = "off"),
  key_cache        = list(title = "MyISAM key cache", order = c("shared", "per_table"), ref = "shared")
)

panel <- function(d, column, title) {
  knob <- KNOBS[[column]]
  d$setting <- d[[column]]
  values <- unique(d$setting)
  lv <- if (column == "spin_wait_delay") {
    num <- suppressWarnings(as.numeric(values))
    values[order(is.na(num), num, values)]
  } else ordered_levels(values, knob$order)
  d$setting <- factor(d$setting, levels = lv)
  d$engine <- factor(d$engine, levels = ordered_levels(d$engine, ENGINE_ORDER))
  d$users_f <- factor(d$users, levels = sort(unique(d$users)))
  d$group <- interaction(d$engine, d$build, d$users_f, d$tables, d$cores, drop = TRUE)
  pk <- peak_rows(d, c("build", "engine", "setting"))
  ref <- if (knob$ref %in% lv) knob$ref else lv[1]
  base <- pk[pk$setting == ref, c("build", "engine", "qps_median")]
  names(base)[3] <- "ref_qps"
  pk <- merge(pk, base, by = c("build", "engine"))
  top <- stats::aggregate(qps_ci_hi ~ build + engine + setting, data = d, FUN = max)
  pk <- merge(pk, top, by = c("build", "engine", "setting"), suffixes = c("", "_top"))
  pk$label <- ifelse(pk$setting == ref, "ref.", ratio_label(pk$qps_median / pk$ref_qps))
  many_users <- length(levels(d$users_f)) > 1
  many_engines <- length(unique(d$engine)) > 1
  dodge <- position_dodge(width = if (many_users || many_engines) 0.5 else 0)
  n_per_group <- table(d$group)
  lined <- d[as.character(d$group) %in% names(n_per_group)[n_per_group > 1], , drop = FALSE]
  p <- ggplot(d, aes(x = setting, y = qps_median, colour = engine, group = group)) +
    (if (nrow(lined)) geom_line(data = lined, position = dodge, linewidth = 0.3, alpha = 0.6)) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), position = dodge,
                  width = 0.25, linewidth = 0.3) +
    geom_point(aes(shape = users_f), position = dodge, size = 1.6) +
    geom_text(data = pk, aes(x = setting, y = qps_ci_hi_top, label = label),
              inherit.aes = FALSE, vjust = -0.6, size = 2.3) +
    scale_colour_engine(breaks = levels(d$engine),
                        guide = if (many_engines) "legend" else "none") +
    scale_shape_discrete("Users", guide = if (many_users) "legend" else "none") +
    scale_x_discrete(NULL) +
    scale_y_kqps(expand = expansion(mult = c(0, 0.14))) +
    expand_limits(y = 0) +
    facet_varying(d, rows = "build") +
    labs(title = title) +
    theme_artifact(base_size = 8)
  p
}

main <- function(args) {
  if (length(args) < 2)
    die("usage: Rscript ", SCRIPT, " <summary.csv>... <out.pdf>")
    d <- read_tidy_all(args[-length(args)])
  plots <- list()
  for (column in names(KNOBS)) {
    dk <- d[d[[column]] != "", , drop = FALSE]
    if (nrow(dk) == 0) next
    title <- paste0("(", letters[length(plots) + 1], ") ", KNOBS[[column]]$title)
    plots[[length(plots) + 1]] <- panel(dk, column, title)
  }
  if (length(plots) == 0)
    fail("no rows with spin_wait_delay, innodb_read_only or key_cache set")
  g <- arrange_panels(plots, widths = c(1.3, 1, 1)[seq_along(plots)])
  save_figure(g, args[length(args)], width = 7,
              height = 0.8 + 1.4 * length(unique(d$build)))
}

run_figure(main)
