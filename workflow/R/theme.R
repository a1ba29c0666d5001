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

# Builds: Okabe-Ito without black, which is the "stable" point of the
# stability key (filled = stable, open = unstable) in every figure.
BUILD_COLOURS <- c("#E69F00", "#0072B2", "#009E73", "#CC79A7",
                   "#D55E00", "#56B4E9", "#999933", "#882255")
STABILITY_COLOUR <- "#000000"

# Verdicts of the claims (harness.analysis.verdict): Okabe-Ito, and always drawn with
# the verdict's word beside the colour (fig_claims.R).
VERDICT_COLOURS <- c(
  "reproduced"          = "#009E73",
  "not reproduced"      = "#D55E00",
  "inconclusive"        = "#E69F00",
  "not measurable here" = "grey50"
)

scale_colour_verdict <- function(name = "Verdict", ...) {
  scale_colour_manual(name = name, values = VERDICT_COLOURS, ...)
}

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
# The device is cairo_pdf, which embeds (subsets of) every font it draws with:
# venues reject PDFs with unembedded fonts (grDevices::pdf embeds none of its
# standard Helvetica). Before drawing, check_hygiene() enforces the figure
# rules of this file.
save_figure <- function(plot, path, width = 7, height = 4) {
  if (inherits(plot, "ggplot")) check_hygiene(plot)
  dir <- dirname(path)
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  tmp <- tempfile(pattern = paste0(".", basename(path), "."), tmpdir = dir,
                  fileext = ".pdf")
  on.exit(if (file.exists(tmp)) unlink(tmp), add = TRUE)
  ggsave(tmp, plot = plot, width = width, height = height, units = "in",
         device = grDevices::cairo_pdf)
  if (!file.rename(tmp, path)) stop("cannot rename ", tmp, " to ", path)
  invisible(path)
}

# --- Figure hygiene (enforced by save_figure) -------------------------------
# 1. Lines only along a measured continuous axis with at least two x values:
#    a geom_line/geom_path whose x is discrete (a categorical setting), or
#    whose groups have fewer than two distinct x values, is an error (use
#    points with intervals instead).
# 2. Facets only over factors that vary: a facet variable taking a single
#    value (the "1 core" column) is an error (use facet_varying()).
# 3. One unit per figure: a y axis on a log scale beside panels in kQPS is
#    the caller's choice of scale; within one ggplot the y scale is shared.
# Figures assembled from several ggplots (arrange_panels) check each panel.

hygiene_error <- function(...) fail("figure hygiene: ", ...)

check_lines <- function(b) {
  for (i in seq_along(b$plot$layers)) {
    geom <- class(b$plot$layers[[i]]$geom)[1]
    if (!geom %in% c("GeomLine", "GeomPath", "GeomStep")) next
    ld <- b$data[[i]]
    if (!nrow(ld)) next
    xs <- b$layout$panel_scales_x[[1]]
    if (!is.null(xs) && xs$is_discrete())
      hygiene_error("a line (", geom, ") along a categorical x axis: draw points with intervals")
    n <- tapply(ld$x, paste(ld$PANEL, ld$group), function(x) length(unique(x)))
    if (any(n < 2))
      hygiene_error("a line (", geom, ") through fewer than two x values: draw points")
  }
}

check_facets <- function(b) {
  lay <- b$layout$layout
  vars <- setdiff(names(lay), c("PANEL", "ROW", "COL", "SCALE_X", "SCALE_Y", "AXIS_X", "AXIS_Y"))
  for (v in vars)
    if (length(unique(lay[[v]])) < 2)
      hygiene_error("facet over '", v, "', which takes one value (", as.character(lay[[v]][1]),
                    "): facet only over factors that vary (facet_varying())")
}

check_hygiene <- function(plot) {
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  b <- ggplot_build(plot)
  check_lines(b)
  check_facets(b)
  invisible(plot)
}

# The unit of a y axis title: its words in parentheses ("(kQPS, log scale)"
# -> "kQPS"; "(thousands)" counts as kQPS), else the whole title.
y_unit <- function(p) {
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  b <- ggplot_build(p)
  name <- b$layout$panel_scales_y[[1]]$name
  if (is.null(name) || inherits(name, "waiver")) name <- b$plot$labels$y
  name <- paste(as.character(name), collapse = " ")
  u <- regmatches(name, regexpr("\\(([^,)]*)", name))
  u <- if (length(u)) sub("^\\(", "", u) else name
  if (u == "thousands") "kQPS" else u
}

check_one_unit <- function(plots) {
  units <- unique(vapply(plots, y_unit, ""))
  if (length(units) > 1)
    hygiene_error("panels of one figure in different units (", paste(units, collapse = ", "),
                  "): use one unit (kQPS or seconds) across the figure")
}

# Add geom_line only where it is meaningful: `x_values` are the distinct
# measured x values; fewer than two gives NULL (points alone).
line_if_continuous <- function(x_values, ...) {
  if (length(unique(x_values)) >= 2) geom_line(...) else NULL
}

# The rows of `d` whose line (the combination of `by` columns, and facet
# columns) has at least two distinct `x` values: the data for geom_line, so a
# series measured at one x only is drawn as points.
lined_rows <- function(d, by, x) {
  if (nrow(d) == 0) return(d)
  key <- interaction(d[by], drop = TRUE)
  n <- tapply(d[[x]], key, function(v) length(unique(v)))
  d[as.character(key) %in% names(n)[n >= 2], , drop = FALSE]
}

# --- Helpers shared by the figure scripts ----------------------------------
# Each script stops with fail(...); its top-level handler prints that message
# as one line on stderr and exits with status 1.

fail <- function(...) stop(paste0(...), call. = FALSE)

# Factor columns are never listed here: by the tidy contract they are the
# columns between `variant` and `tables` of each file's header
# (docs/data-contracts.md); their words, baselines and value order come from
# the factor table (data/tidy/factors.csv, written from harness.measure.factors).
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

# --- Several hosts (docs/results.md, "Several hosts in one paper") ----------
# A several-host paper runs a figure script with leading options (run_figure
# takes them off before main() sees its arguments):
#   --host ID             the first host's id, whose tidy files are the script's own inputs
#   --host-file ID=PATH   another host's tidy file; read with the first host's file of the
#                         same name (data/tidy/hosts/<ID>/<name>)
# read_tidy() then returns every host's rows, with a `host` column and each build named
# "<build> @ <host>": every figure keeps builds apart (colour, line type, facet or axis),
# and so keeps hosts apart; per-build ratios and baselines stay within one host. With
# one host there are no such options and nothing changes.
FIGURE_HOST <- NULL
FIGURE_HOST_FILES <- data.frame(host = character(), path = character(), stringsAsFactors = FALSE)

take_host_args <- function(args) {
  while (length(args) >= 2 && args[1] %in% c("--host", "--host-file")) {
    if (args[1] == "--host") {
      FIGURE_HOST <<- args[2]
    } else {
      if (!grepl("^[^=]+=.+", args[2])) fail("--host-file ", args[2], ": give ID=PATH")
      FIGURE_HOST_FILES <<- rbind(FIGURE_HOST_FILES, data.frame(
        host = sub("=.*", "", args[2]), path = sub("^[^=]*=", "", args[2]), stringsAsFactors = FALSE))
    }
    args <- args[-(1:2)]
  }
  if (nrow(FIGURE_HOST_FILES) && is.null(FIGURE_HOST)) fail("--host-file without --host (the first host's id)")
  args
}

with_host <- function(d, host) {
  d$host <- rep(host, nrow(d))
  if ("build" %in% names(d)) d$build <- paste0(d$build, " @ ", host)
  d
}

# Read a tidy CSV (and, in a several-host paper, every other host's file of the same name):
# see read_tidy_file.
read_tidy <- function(path, required = SUMMARY_COLUMNS, numeric = SUMMARY_NUMERIC) {
  d <- read_tidy_file(path, required, numeric)
  if (is.null(FIGURE_HOST)) return(d)
  ds <- list(with_host(d, FIGURE_HOST))
  more <- FIGURE_HOST_FILES[basename(FIGURE_HOST_FILES$path) == basename(path), , drop = FALSE]
  for (i in seq_len(nrow(more)))
    ds[[length(ds) + 1]] <- with_host(read_tidy_file(more$path[i], required, numeric), more$host[i])
  cols <- Reduce(intersect, lapply(ds, names))
  do.call(rbind, lapply(ds, function(x) x[, cols, drop = FALSE]))
}

# Read a tidy CSV as text, check its columns, convert `numeric` columns.
read_tidy_file <- function(path, required = SUMMARY_COLUMNS, numeric = SUMMARY_NUMERIC) {
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

# --- Steps summaries (study C: one row per build, step, engine, metric) ---------------
STEPS_COLUMNS <- c("build", "step", "engine", "metric", "value_median", "value_ci_lo", "value_ci_hi")

# The rows of one step and metric, the value columns numeric, only positive medians
# kept; with `must`, a step without rows stops the figure naming it.
read_steps <- function(path, step, metric, must = TRUE) {
  d <- read_tidy(path, required = STEPS_COLUMNS, numeric = character())
  d <- d[d$step == step & d$metric == metric, , drop = FALSE]
  if (must && nrow(d) == 0) fail(path, ": no rows of step ", step, " metric ", metric)
  for (col in c("value_median", "value_ci_lo", "value_ci_hi")) d[[col]] <- suppressWarnings(as.numeric(d[[col]]))
  d[is.finite(d$value_median) & d$value_median > 0, , drop = FALSE]
}

# The factor table (harness.measure.factors as CSV), or NULL.
read_factor_table <- function(path) {
  if (is.null(path)) return(NULL)
  f <- as.data.frame(data.table::fread(path, colClasses = "character", na.strings = NULL),
                     stringsAsFactors = FALSE)
  missing <- setdiff(FACTOR_TABLE_COLUMNS, names(f))
  if (length(missing)) fail(path, ": not a factor table, missing column(s): ", paste(missing, collapse = ", "))
  f
}

# Split a script's input paths into tidy files, the factor table and the
# published marks (each recognised by its header): list(tidy = paths, factors =
# the factor table or NULL, published = the marks' path or NULL).
split_inputs <- function(paths) {
  header <- function(p) {
    if (!file.exists(p)) return(character())
    first <- readLines(p, n = 1, warn = FALSE)
    if (length(first) == 1) strsplit(first, ",")[[1]] else character()
  }
  is_table <- vapply(paths, function(p) identical(header(p), FACTOR_TABLE_COLUMNS), logical(1))
  is_marks <- vapply(paths, function(p) basename(p) == "published.csv" ||
                       identical(header(p)[1:2], c("figure", "study")), logical(1))
  list(tidy = paths[!is_table & !is_marks],
       factors = read_factor_table(if (any(is_table)) paths[is_table][1] else NULL),
       published = if (any(is_marks)) paths[is_marks][1] else NULL)
}

# --- Published marks (data/tidy/published.csv, harness.report.published) -----
# One row per number a study published for a quantity a figure plots. Its key
# columns place it (empty: any value; `levels` is the '|'-joined values of the
# factors the data vary, levels_key()); `value` is in the figure's units, or,
# when ref_engine/ref_levels is set, a ratio to the measured value of that
# reference in the same panel (so the mark shows the published shape on this
# host). Drawn alike in every figure by geom_published().

PUBLISHED_COLUMNS <- c("figure", "study", "experiment", "engine", "levels", "tables", "cores", "step",
                       "metric", "ref_engine", "ref_levels", "value", "label", "source")
MARK_KEYS <- c("experiment", "engine", "levels", "tables", "cores", "step", "metric")

# The marks of `figure` in the table at `path` (NULL when path is NULL).
read_published <- function(path, figure) {
  if (is.null(path)) return(NULL)
  if (!file.exists(path)) fail("published marks not found: ", path)
  m <- tryCatch(suppressWarnings(data.table::fread(path, colClasses = "character", na.strings = NULL,
                                                   showProgress = FALSE)),
                error = function(e) fail(path, ": not a readable CSV (", conditionMessage(e), ")"))
  m <- as.data.frame(m, stringsAsFactors = FALSE)
  missing <- setdiff(PUBLISHED_COLUMNS, names(m))
  if (length(missing))
    fail(path, ": not a published-marks table, missing column(s): ", paste(missing, collapse = ", "))
  m <- m[m$figure == figure, , drop = FALSE]
  m$value <- suppressWarnings(as.numeric(m$value))
  if (anyNA(m$value)) fail(path, ": non-numeric value in a mark of figure ", figure)
  m
}

# Per row: the values of the factors `vf` joined by '|' (a mark's `levels`).
levels_key <- function(d, vf) {
  if (length(vf) == 0) return(rep("", nrow(d)))
  do.call(paste, c(lapply(vf, function(f) as.character(d[[f]])), sep = "|"))
}

# Where each mark goes: `d` is what the figure plots (one row per point, the
# key columns of the marks among its columns), `y` its y column, `x` its x
# column, `panel` the columns a mark and its reference share (facets, build).
# A relative mark's reference is the median `y` of the reference rows in the
# panel (over builds, when build is not a panel column). Returns the columns
# x, panel, y and label, or NULL.
place_published <- function(marks, d, y, x, panel = character()) {
  if (is.null(marks) || nrow(marks) == 0 || nrow(d) == 0) return(NULL)
  rows_of <- function(m, engine, levels) {
    m$engine <- engine
    m$levels <- levels
    ok <- rep(TRUE, nrow(d))
    for (k in MARK_KEYS) if (nzchar(m[[k]])) {
      if (!k %in% names(d)) return(d[0, , drop = FALSE])  # a key the figure does not plot
      ok <- ok & as.character(d[[k]]) == m[[k]]
    }
    d[ok, , drop = FALSE]
  }
  key <- function(z) if (length(panel)) do.call(paste, c(lapply(panel, function(p) as.character(z[[p]])), sep = "\r"))
                     else rep("", nrow(z))
  out <- list()
  unplaced <- character()
  for (i in seq_len(nrow(marks))) {
    m <- marks[i, ]
    t <- rows_of(m, m$engine, m$levels)
    if (nrow(t) == 0) { unplaced <- c(unplaced, paste0(m$label, " [no measured cell of its keys]")); next }
    t$.y <- m$value
    if (nzchar(m$ref_engine) || nzchar(m$ref_levels)) {
      r <- rows_of(m, if (nzchar(m$ref_engine)) m$ref_engine else m$engine,
                   if (nzchar(m$ref_levels)) m$ref_levels else m$levels)
      if (nrow(r) == 0) { unplaced <- c(unplaced, paste0(m$label, " [no measured reference]")); next }
      ref <- tapply(r[[y]], key(r), stats::median)
      t$.y <- m$value * unname(ref[key(t)])
    }
    t <- t[is.finite(t$.y), c(x, panel, ".y"), drop = FALSE]
    if (nrow(t) == 0) { unplaced <- c(unplaced, paste0(m$label, " [no reference in its panel]")); next }
    t$label <- m$label
    out[[length(out) + 1]] <- t
  }
  # one line on stderr (the rule's log): how many marks were drawn, and why any was not
  message(sprintf("published marks: %d of %d placed%s", length(out), nrow(marks),
                  if (length(unplaced)) paste0("; not placed: ", paste(unplaced, collapse = "; ")) else ""))
  if (length(out) == 0) return(NULL)
  o <- stats::aggregate(.y ~ ., data = do.call(rbind, out), FUN = stats::median)
  for (col in intersect(c(x, panel), names(d)))  # keep the figure's level order
    if (is.factor(d[[col]])) o[[col]] <- factor(as.character(o[[col]]), levels = levels(d[[col]]))
  names(o)[names(o) == ".y"] <- "y"
  o
}

# The marks as black open diamonds with their label above (legend: "published");
# NULL without marks. Add it after the data layers: a discrete x axis takes its
# order from the first layer. The label is on two lines ("published" over the number),
# so it is narrower than a panel of one engine.
# beside: the measured x values of a continuous (log) x axis: each label then goes
# beside its diamond, towards the middle of the x range (right of a mark in the left
# half, left of one in the right half), so a mark at the first or last x never has its
# label cut at the panel's edge; with one x value, above it.
# text = FALSE: the diamond alone; the figure then prints the mark's label inside its own
# data label (with_published_label), so the two can never overlap.
geom_published <- function(marks, x, vjust = -0.8, hjust = 0.5, size = 2.1, text = TRUE, beside = NULL) {
  if (is.null(marks) || nrow(marks) == 0) return(NULL)
  marks$label <- published_lines(marks$label)
  marks$.hjust <- hjust
  marks$.vjust <- vjust
  if (!is.null(beside)) {
    r <- range(log(beside))
    if (diff(r) > 0) {
      left <- (log(marks[[x]]) - r[1]) / diff(r) < 0.5
      marks$.hjust <- ifelse(left, -0.15, 1.15)
      marks$.vjust <- 0.5
    } else {
      marks$.hjust <- 0.5
      marks$.vjust <- -0.5
    }
  }
  list(
    geom_point(data = marks, aes(x = .data[[x]], y = y, size = "published"), inherit.aes = FALSE,
               shape = 5, colour = "black", stroke = 0.6),
    if (text) geom_text(data = marks, aes(x = .data[[x]], y = y, label = label, hjust = .hjust, vjust = .vjust),
                        inherit.aes = FALSE, colour = "black", size = size, lineheight = 0.85,
                        show.legend = FALSE),
    scale_size_manual(NULL, values = c(published = 2.2), guide = guide_legend(order = 9))
  )
}

# "published 1.08×" -> "published\n1.08×": a published label on two narrower lines.
published_lines <- function(label) sub("^published ", "published\n", label)

# The data labels `d$label` with the published marks' labels of the same keys (x and
# panel columns) appended on the next lines: one text per position, so a published
# label never lands on a data label, whatever the values. `.pub_y` is the highest mark
# at the row's position (NA without one): the caller sets the text above it too
# (label_y()), so the diamond never sits on the text.
with_published_label <- function(d, marks, keys) {
  d$.pub_y <- rep(NA_real_, nrow(d))
  if (is.null(marks) || nrow(marks) == 0) return(d)
  keys <- intersect(keys, intersect(names(d), names(marks)))
  mk <- stats::aggregate(marks["label"], by = lapply(marks[keys], as.character),
                         FUN = function(x) paste(unique(x), collapse = "; "))
  names(mk)[names(mk) == "label"] <- ".pub"
  key_d <- do.call(paste, c(lapply(d[keys], as.character), sep = "\r"))
  key_m <- do.call(paste, c(mk[keys], sep = "\r"))
  pub <- mk$.pub[match(key_d, key_m)]
  d$label <- ifelse(is.na(pub), d$label, paste0(d$label, "\n", published_lines(pub)))
  top <- tapply(marks$y, do.call(paste, c(lapply(marks[keys], as.character), sep = "\r")), max)
  d$.pub_y <- unname(top[key_d])
  d
}

# Where a data label goes: above `y` (its interval's top) and above any published
# diamond at its position (with_published_label's .pub_y).
label_y <- function(d, y) pmax(y, if (".pub_y" %in% names(d)) d$.pub_y else NA_real_, na.rm = TRUE)

# Wrap a title or label to `width` characters: at spaces, and inside a long word after
# '_' (setting names such as innodb_spin_wait_delay), so a narrow panel never cuts it.
wrap_label <- function(x, width) {
  vapply(x, function(s) {
    lines <- strwrap(s, width)
    out <- character()
    for (l in lines) {
      while (nchar(l) > width && grepl("_", substr(l, 2, width))) {
        cut <- max(gregexpr("_", substr(l, 1, width))[[1]])
        out <- c(out, substr(l, 1, cut))
        l <- substring(l, cut + 1)
      }
      out <- c(out, l)
    }
    paste(out, collapse = "\n")
  }, character(1), USE.NAMES = FALSE)
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
  for (p in plots) check_hygiene(p)
  check_one_unit(plots)
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
  tryCatch(main(take_host_args(commandArgs(trailingOnly = TRUE))),
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

plot_settings <- function(d, ftab, marks = NULL) {
  vf <- varied_factors(d)
  if (length(vf) == 0) fail("no factor varies in the input: nothing to compare")
  d$levels <- levels_key(d, vf)
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
  pub <- place_published(marks, pk, "qps_median", "setting", c("build", "panel"))
  pk <- with_published_label(pk, pub, c("setting", "build", "panel"))
  ggplot(pk, aes(x = setting, y = qps_median, fill = engine)) +
    geom_col(width = 0.7, colour = "grey20", linewidth = 0.2) +
    geom_errorbar(aes(ymin = qps_ci_lo, ymax = qps_ci_hi), width = 0.25, linewidth = 0.3) +
    geom_text(aes(y = label_y(pk, pmax(qps_ci_hi, qps_median)), label = label), vjust = -0.5, size = 2.3,
              lineheight = 0.85) +
    geom_published(pub, "setting", text = FALSE) +
    scale_fill_engine(guide = "none") +
    scale_x_discrete(NULL) +
    scale_y_kqps("Peak median QPS (thousands)", expand = expansion(mult = c(0, if (is.null(pub)) 0.14 else 0.5))) +
    facet_grid(if (length(unique(pk$build)) > 1) build ~ panel else . ~ panel, scales = "free_x") +
    labs(caption = codes_legend(vf, ftab)) +
    theme_artifact(base_size = 7)
}
