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

# Columns that name a tidy cell besides engine/tables/cores/users; a column
# missing from an older file is read as empty (docs/data-contracts.md).
FACTOR_COLUMNS <- c("variant", "trx", "ps", "pfs", "spin_wait_delay",
                    "innodb_read_only", "key_cache")
SUMMARY_COLUMNS <- c("experiment", "build", "engine", "tables", "cores",
                     "users", "qps_median", "qps_ci_lo", "qps_ci_hi", "unstable")
SUMMARY_NUMERIC <- c("tables", "cores", "users", "qps_median", "qps_ci_lo",
                     "qps_ci_hi")

as_flag <- function(x) toupper(trimws(as.character(x))) %in% c("TRUE", "T", "1", "YES")

plural <- function(n, word) paste(n, ifelse(as.character(n) == "1", word, paste0(word, "s")))

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
  for (col in setdiff(FACTOR_COLUMNS, names(d))) d[[col]] <- ""
  for (col in c(FACTOR_COLUMNS, "build", "engine", "experiment"))
    if (col %in% names(d)) d[[col]] <- trimws(ifelse(is.na(d[[col]]), "", d[[col]]))
  for (col in numeric) {
    v <- suppressWarnings(as.numeric(d[[col]]))
    if (anyNA(v)) fail(path, ": non-numeric or empty values in column ", col)
    d[[col]] <- v
  }
  if ("unstable" %in% names(d)) d$unstable <- as_flag(d$unstable)
  d
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

scale_y_kqps <- function(name = "Median throughput (kQPS)", ...) {
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
