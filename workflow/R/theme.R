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
