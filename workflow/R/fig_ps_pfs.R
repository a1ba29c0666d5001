# Study A3, Point-Selects with server-side prepared statements (PS) on/off x
# Performance Schema (PFS) on/off: peak median QPS (over users and cores) per
# engine and variant, 95% CI of that cell's median, and the ratio to the
# baseline "PS off, PFS on" above each bar. Columns: engine (x tables when
# several); rows: builds when there are several. Absent variants are absent.
#
# Usage: Rscript workflow/R/fig_ps_pfs.R <ps_pfs_summary.csv> <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
onoff <- function(x) ifelse(x %in% c("on", "off"), x, "default")

plot_ps_pfs <- function(d) {
  d <- d[d$ps %in% c("on", "off") | d$pfs %in% c("on", "off"), , drop = FALSE]
  if (nrow(d) == 0) fail("no rows with ps or pfs set to on/off")
  d$setting <- paste0("PS ", onoff(d$ps), "\nPFS ", onoff(d$pfs))
  pk <- peak_rows(d, c("build", "engine", "tables", "setting"))
  preferred <- c("PS off\nPFS on", "PS on\nPFS on", "PS off\nPFS off", "PS on\nPFS off")
  pk$setting <- factor(pk$setting, levels = ordered_levels(pk$setting, preferred))
  pk$engine <- factor(pk$engine, levels = ordered_levels(pk$engine, ENGINE_ORDER))
  base <- pk[pk$setting == "PS off\nPFS on", c("build", "engine", "tables", "qps_median")]
  names(base)[4] <- "base_qps"
  pk <- merge(pk, base, by = c("build", "engine", "tables"), all.x = TRUE)
  pk$label <- ifelse(pk$setting == "PS off\nPFS on", "base",
                     ratio_label(pk$qps_median / pk$base_qps))
  pk <- pk[order(pk$engine, pk$tables), , drop = FALSE]
  pk$panel <- factor(paste0(pk$engine, ", ", plural(pk$tables, "table")))
  pk$panel <- factor(pk$panel, levels = unique(as.character(pk$panel)))
  ggplot(pk, aes(x = setting, y = qps_median, fill = engine)) +
    geom_col(width = 0.7, colour = "grey20", linewidth = 0.2) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.25, linewidth = 0.3) +
    geom_text(aes(y = pmax(qps_ci_hi, qps_median), label = label), vjust = -0.5, size = 2.3) +
    scale_fill_engine(guide = "none") +
    scale_x_discrete(NULL) +
    scale_y_kqps("Peak median throughput (kQPS)", expand = expansion(mult = c(0, 0.14))) +
    facet_grid(if (length(unique(pk$build)) > 1) build ~ panel else . ~ panel) +
    theme_artifact(base_size = 8)
}

main <- function(args) {
  if (length(args) != 2)
    die("usage: Rscript ", SCRIPT, " <ps_pfs_summary.csv> <out.pdf>")
    d <- read_tidy(args[1])
  p <- plot_ps_pfs(d)
  save_figure(p, args[2], width = 3.4, height = 0.7 + 1.6 * length(unique(d$build)))
}

run_figure(main)
