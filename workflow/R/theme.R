# Shared look of every figure in the paper. Source this file from a figure
# script; it defines no data and writes nothing by itself.
#
#   theme_artifact()        ggplot2 theme for a two-column LaTeX paper
#   scale_colour_engine()   fixed colour per storage engine
#   scale_colour_build()    stable colour per build name
#   save_figure(p, path)    atomic PDF export

suppressPackageStartupMessages(library(ggplot2))

# Okabe-Ito colours: distinguishable with colour-vision deficiencies and in
# grey-scale print. An engine keeps its colour in every figure.
ENGINE_COLOURS <- c(
  "InnoDB"       = "#0072B2",
  "MyISAM"       = "#D55E00",
  "MEMORY"       = "#009E73",
  "MEMORY-BTREE" = "#56B4E9",
  "ARCHIVE"      = "#CC79A7"
)
OTHER_COLOUR <- "grey45"

BUILD_COLOURS <- c("#000000", "#E69F00", "#0072B2", "#009E73",
                   "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")

theme_artifact <- function(base_size = 8, base_family = "") {
  theme_bw(base_size = base_size, base_family = base_family) +
    theme(
      legend.position   = "bottom",
      legend.box        = "horizontal",
      legend.margin     = margin(0, 0, 0, 0),
      legend.key.height = unit(0.8, "lines"),
      legend.key.width  = unit(1.6, "lines"),
      panel.grid.minor  = element_blank(),
      strip.background  = element_rect(fill = "grey92", colour = "grey70"),
      strip.text        = element_text(margin = margin(2, 2, 2, 2)),
      plot.margin       = margin(3, 4, 3, 3)
    )
}

# Engines outside the palette are drawn in grey rather than dropped.
scale_colour_engine <- function(name = "Engine", ...) {
  scale_colour_manual(name = name, values = ENGINE_COLOURS,
                      na.value = OTHER_COLOUR, ...)
}

scale_fill_engine <- function(name = "Engine", ...) {
  scale_fill_manual(name = name, values = ENGINE_COLOURS,
                    na.value = OTHER_COLOUR, ...)
}

# Colours are assigned to the sorted build names, so a given set of builds
# gets the same colours in every figure. Pass `builds` (all builds of the
# paper) to keep colours stable even in figures that show only some of them.
build_palette <- function(builds) {
  builds <- sort(unique(as.character(builds)))
  cols <- rep_len(BUILD_COLOURS, length(builds))
  stats::setNames(cols, builds)
}

scale_colour_build <- function(builds = NULL, name = "Build", ...) {
  if (is.null(builds)) {
    scale_colour_manual(name = name, values = BUILD_COLOURS, ...)
  } else {
    scale_colour_manual(name = name, values = build_palette(builds), ...)
  }
}

# Write `plot` as a PDF to `path` (inches). The file appears only complete:
# ggsave writes a temporary file in the same directory, renamed into place.
save_figure <- function(plot, path, width = 7, height = 4) {
  dir <- dirname(path)
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  tmp <- tempfile(pattern = paste0(".", basename(path), "."), tmpdir = dir,
                  fileext = ".pdf")
  on.exit(if (file.exists(tmp)) unlink(tmp), add = TRUE)
  ggsave(tmp, plot = plot, width = width, height = height, units = "in",
         device = grDevices::pdf)
  if (!file.rename(tmp, path)) stop("cannot rename ", tmp, " to ", path)
  invisible(path)
}

# --- Helpers shared by the figure scripts ----------------------------------
# Each script stops with fail(...); its top-level handler prints that message
# as one line on stderr and exits with status 1.

fail <- function(...) stop(paste0(...), call. = FALSE)

# Factor columns are never listed here: by the tidy contract they are the
# columns between `variant` and `tables` of each file's header
# (docs/data-contracts.md); their words, baselines and value order come from
# the factor table (data/tidy/factors.csv, written from harness.factors).
SUMMARY_COLUMNS <- c("experiment", "build", "engine", "variant", "tables", "cores",
                     "users", "qps_median", "qps_ci_lo", "qps_ci_hi", "unstable")
SUMMARY_NUMERIC <- c("tables", "cores", "users", "qps_median", "qps_ci_lo",
                     "qps_ci_hi")
FACTOR_TABLE_COLUMNS <- c("name", "code", "words", "baseline", "values")

as_flag <- function(x) toupper(trimws(as.character(x))) %in% c("TRUE", "T", "1", "YES")

plural <- function(n, word) paste(n, ifelse(as.character(n) == "1", word, paste0(word, "s")))

# The factor columns of a tidy data frame: those between `variant` and `tables`.
factor_columns <- function(d) {
  cols <- names(d)
  i <- match("variant", cols)
  j <- match("tables", cols)
  if (is.na(i) || is.na(j) || j <= i + 1) return(character())
  cols[(i + 1):(j - 1)]
}

# Verdicts use the server's own statement count (qps_server_*, without
# BEGIN/COMMIT), so the figures draw it too: a file that has those columns
# must have them for every row; a file without them (an older layout) is
# drawn with sysbench's count.
use_server_metric <- function(d, path) {
  src <- paste0("qps_server_", c("median", "ci_lo", "ci_hi"))
  if (!all(src %in% names(d))) return(d)
  for (col in src) {
    v <- suppressWarnings(as.numeric(d[[col]]))
    if (anyNA(v)) fail(path, ": non-numeric or empty values in column ", col)
    d[[sub("qps_server_", "qps_", col)]] <- d[[col]]
  }
  d
}

# Read a tidy CSV as text, check its columns, convert `numeric` columns.
read_tidy <- function(path, required = SUMMARY_COLUMNS, numeric = SUMMARY_NUMERIC) {
  if (!file.exists(path)) fail("input file not found: ", path)
  d <- tryCatch(
    suppressWarnings(data.table::fread(path, colClasses = "character",
                                       na.strings = NULL, showProgress = FALSE)),
    error = function(e) fail(path, ": not a readable CSV (", conditionMessage(e), ")"))
  d <- as.data.frame(d, stringsAsFactors = FALSE)
  missing <- setdiff(required, names(d))
  if (length(missing) > 0)
    fail(path, ": missing column(s): ", paste(missing, collapse = ", "))
  if (nrow(d) == 0) fail(path, ": no rows")
  for (col in c(factor_columns(d), "variant", "build", "engine", "experiment"))
    if (col %in% names(d)) d[[col]] <- trimws(ifelse(is.na(d[[col]]), "", d[[col]]))
  if ("qps_median" %in% numeric) d <- use_server_metric(d, path)
  for (col in numeric) {
    v <- suppressWarnings(as.numeric(d[[col]]))
    if (anyNA(v)) fail(path, ": non-numeric or empty values in column ", col)
    d[[col]] <- v
  }
  if ("unstable" %in% names(d)) d$unstable <- as_flag(d$unstable)
  d
}

# The factor table (harness.factors as CSV), or NULL.
read_factor_table <- function(path) {
  if (is.null(path)) return(NULL)
  f <- as.data.frame(data.table::fread(path, colClasses = "character", na.strings = NULL),
                     stringsAsFactors = FALSE)
  missing <- setdiff(FACTOR_TABLE_COLUMNS, names(f))
  if (length(missing)) fail(path, ": not a factor table, missing column(s): ", paste(missing, collapse = ", "))
  f
}

# Split a script's input paths into tidy files and the factor table (recognised
# by its header): list(tidy = paths, factors = the factor table or NULL).
split_inputs <- function(paths) {
  is_table <- vapply(paths, function(p) {
    if (!file.exists(p)) return(FALSE)
    first <- readLines(p, n = 1, warn = FALSE)
    length(first) == 1 && identical(strsplit(first, ",")[[1]], FACTOR_TABLE_COLUMNS)
  }, logical(1))
  list(tidy = paths[!is_table], factors = read_factor_table(if (any(is_table)) paths[is_table][1] else NULL))
}

# A factor's words for the paper (the factor table's), else its column name.
factor_words <- function(name, ftab) {
  if (!is.null(ftab) && name %in% ftab$name) ftab$words[match(name, ftab$name)] else name
}

factor_code <- function(name, ftab) {
  if (!is.null(ftab) && name %in% ftab$name) ftab$code[match(name, ftab$name)] else name
}

# "<code>: <words>; ..." (a caption for labels that use the factors' codes).
codes_legend <- function(factors, ftab) {
  paste(vapply(factors, function(f) paste0(factor_code(f, ftab), ": ", short_words(f, ftab)), ""),
        collapse = "; ")
}

short_words <- function(name, ftab) sub(" *\\(.*\\)$", "", factor_words(name, ftab))

factor_baseline <- function(name, ftab) {
  if (!is.null(ftab) && name %in% ftab$name) ftab$baseline[match(name, ftab$name)] else NA_character_
}

# Values of a factor in the factor table's order, then any others sorted.
factor_levels <- function(name, values, ftab) {
  pref <- if (!is.null(ftab) && name %in% ftab$name) strsplit(ftab$values[match(name, ftab$name)], "|",
                                                              fixed = TRUE)[[1]] else character()
  values <- unique(as.character(values))
  num <- suppressWarnings(as.numeric(values))
  rest <- setdiff(values, pref)
  if (length(rest) && !anyNA(suppressWarnings(as.numeric(rest)))) rest <- rest[order(as.numeric(rest))]
  else rest <- sort(rest)
  c(intersect(pref, values), rest)
}

# The factor columns that take more than one value in `d`.
varied_factors <- function(d) {
  cols <- factor_columns(d)
  cols[vapply(cols, function(x) length(unique(d[[x]][d[[x]] != ""])) > 1, logical(1))]
}

# Per row: the settings of the `factors` in words, "prepared statements on,
# Performance Schema off"; "" when `factors` is empty.
setting_label <- function(d, factors, ftab, sep = ", ", codes = FALSE) {
  if (length(factors) == 0) return(rep("", nrow(d)))
  name <- function(f) if (codes) factor_code(f, ftab) else short_words(f, ftab)
  parts <- lapply(factors, function(f) paste(name(f), gsub("_", " ", d[[f]])))
  do.call(paste, c(parts, sep = sep))
}

# Whether each row is at the baseline of every factor in `factors` (a factor
# without a baseline in the table, or whose baseline is absent, counts its
# first level as the reference).
at_baseline <- function(d, factors, ftab) {
  ok <- rep(TRUE, nrow(d))
  for (f in factors) {
    lv <- factor_levels(f, d[[f]], ftab)
    b <- factor_baseline(f, ftab)
    ref <- if (!is.na(b) && b %in% lv) b else lv[1]
    ok <- ok & d[[f]] == ref
  }
  ok
}

# Several tidy files of the same kind, one data frame (columns in common).
read_tidy_all <- function(paths, ...) {
  ds <- lapply(paths, read_tidy, ...)
  cols <- Reduce(intersect, lapply(ds, names))
  do.call(rbind, lapply(ds, function(d) d[, cols, drop = FALSE]))
}

# Per group of `by`, the row with the highest median QPS (the study's "peak").
peak_rows <- function(d, by) {
  if (nrow(d) == 0) return(d)
  key <- interaction(d[by], drop = TRUE, lex.order = TRUE)
  out <- do.call(rbind, lapply(split(d, key), function(g) g[which.max(g$qps_median), , drop = FALSE]))
  rownames(out) <- NULL
  out
}

kqps_labels <- function(y) format(y / 1000, trim = TRUE, big.mark = ",", drop0trailing = TRUE)

scale_y_kqps <- function(name = "Median QPS (thousands)", ...) {
  scale_y_continuous(name, labels = kqps_labels, ...)
}

# Several ggplots side by side (or in `ncol` columns) as one grob for
# save_figure(). `widths` are relative.
arrange_panels <- function(plots, ncol = length(plots), widths = rep(1, ncol)) {
  # ggplotGrob() needs an open device; a null one, so no Rplots.pdf appears
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  nrow <- ceiling(length(plots) / ncol)
  g <- gtable::gtable(widths = grid::unit(widths[seq_len(ncol)], "null"),
                      heights = grid::unit(rep(1, nrow), "null"))
  for (i in seq_along(plots)) {
    r <- (i - 1) %/% ncol + 1
    c <- (i - 1) %% ncol + 1
    g <- gtable::gtable_add_grob(g, ggplotGrob(plots[[i]]), t = r, l = c,
                                 name = paste0("panel-", i))
  }
  g
}

# facet_grid over the given (label) columns that take more than one value in
# `d`; NULL (no facets) when none does. `+ NULL` is a no-op for ggplot.
facet_varying <- function(d, rows = character(), cols = character(), ...) {
  varying <- function(v) v[vapply(v, function(x) length(unique(d[[x]])) > 1, logical(1))]
  rows <- varying(rows)
  cols <- varying(cols)
  if (length(rows) == 0 && length(cols) == 0) return(NULL)
  side <- function(v) if (length(v)) paste0("`", v, "`", collapse = " + ") else "."
  facet_grid(stats::as.formula(paste(side(rows), "~", side(cols))), ...)
}

# "x1.23" labels for ratios (the multiplication sign is in the PDF fonts).
ratio_label <- function(r) ifelse(is.finite(r), sprintf("\u00d7%.2f", r), "")

# Levels in a preferred order first, then any others sorted.
ordered_levels <- function(x, preferred) {
  x <- unique(as.character(x))
  c(intersect(preferred, x), sort(setdiff(x, preferred)))
}

ENGINE_ORDER <- names(ENGINE_COLOURS)

# Engine names on a discrete axis: "MEMORY-BTREE" on two lines.
engine_axis_labels <- function(x) sub("-", "-\n", x, fixed = TRUE)

# --- Running a figure script ------------------------------------------------
# Every script starts with one line that sources this file from its own
# directory, defines main(args) and ends with run_figure(main): any error is
# one line on stderr, "<script>: error: <message>", and exit status 1.

SCRIPT <- basename(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))

die <- function(...) {
  cat(SCRIPT, ": error: ", ..., "\n", sep = "", file = stderr())
  quit(save = "no", status = 1)
}

run_figure <- function(main) {
  tryCatch(main(commandArgs(trailingOnly = TRUE)),
           error = function(e) die(gsub("\n", " ", conditionMessage(e))))
}

# --- Settings of one experiment, as bars ----------------------------------------
# Peak median per engine and setting (every combination of the factors the
# input varies), with the interval of that cell's median and, above each bar,
# its ratio to the baseline setting ("base"; the factor table's baselines, or
# the first level when the baseline was not measured). Used by fig_trx.R and
# fig_ps_pfs.R; no factor is named here.

setting_order <- function(d, factors, ftab, baseline_first = TRUE) {
  keys <- lapply(factors, function(f) {
    lv <- factor_levels(f, d[[f]], ftab)
    b <- factor_baseline(f, ftab)
    if (baseline_first && !is.na(b) && b %in% lv) lv <- c(b, setdiff(lv, b))
    match(d[[f]], lv)
  })
  do.call(order, keys)
}

plot_settings <- function(d, ftab) {
  vf <- varied_factors(d)
  if (length(vf) == 0) fail("no factor varies in the input: nothing to compare")
  d <- d[setting_order(d, vf, ftab), , drop = FALSE]
  d$setting <- setting_label(d, vf, ftab, sep = "\n", codes = TRUE)
  d$base <- at_baseline(d, vf, ftab)
  levels_s <- unique(d$setting)
  pk <- peak_rows(d, c("build", "engine", "tables", "setting"))
  pk$setting <- factor(pk$setting, levels = levels_s)
  pk$engine <- factor(pk$engine, levels = ordered_levels(pk$engine, ENGINE_ORDER))
  base <- pk[pk$base, c("build", "engine", "tables", "qps_median")]
  names(base)[4] <- "base_qps"
  pk <- merge(pk, base, by = c("build", "engine", "tables"), all.x = TRUE)
  pk$label <- ifelse(pk$base, "base", ratio_label(pk$qps_median / pk$base_qps))
  pk <- pk[order(pk$engine, pk$tables), , drop = FALSE]
  pk$panel <- paste0(pk$engine, ", ", plural(pk$tables, "table"))
  pk$panel <- factor(pk$panel, levels = unique(pk$panel))
  ggplot(pk, aes(x = setting, y = qps_median, fill = engine)) +
    geom_col(width = 0.7, colour = "grey20", linewidth = 0.2) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.25, linewidth = 0.3) +
    geom_text(aes(y = pmax(qps_ci_hi, qps_median), label = label), vjust = -0.5, size = 2.3) +
    scale_fill_engine(guide = "none") +
    scale_x_discrete(NULL) +
    scale_y_kqps("Peak median QPS (thousands)", expand = expansion(mult = c(0, 0.14))) +
    facet_grid(if (length(unique(pk$build)) > 1) build ~ panel else . ~ panel, scales = "free_x") +
    labs(caption = codes_legend(vf, ftab)) +
    theme_artifact(base_size = 7)
}
