# Study A1: the keyword-count table, drawn as a figure from the count gate of
# every prepared dataset (data/tidy/fts_gate.csv): per keyword, in the study's
# order, the published count, the stand-in's planted count (or, for the real
# OHSUMED corpus, nothing: there the engines' counts are the measurement), and
# what InnoDB and MyISAM counted. An engine's column lists its distinct counts
# over the builds ("a / b" when builds disagree); a count that differs from the
# published one is printed in bold red. The footer states the corpus and
# tokenizer settings (data/tidy/fts_load.csv).
#
# Usage: Rscript workflow/harness/studies/a1/R/fig_fts_counts.R <fts_gate.csv> [fts_load.csv] <out.pdf>
#   (without fts_load.csv the footer names the corpus from the gate rows only)

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
GATE_COLUMNS <- c("build", "engine", "corpus", "source", "keyword", "rank", "published", "planted", "measured")
LOAD_COLUMNS <- c("build", "engine", "corpus", "source", "rows", "bytes")

distinct_counts <- function(x) paste(unique(x[order(as.numeric(x))]), collapse = " / ")

count_table <- function(g) {
  kw <- unique(g[order(g$rank), c("rank", "keyword", "published")])
  real <- any(g$source == "ohsumed")
  corpus_col <- if (real) "OHSUMED" else "stand-in (planted)"
  out <- data.frame(rank = kw$rank, keyword = kw$keyword, published = kw$published)
  out[[corpus_col]] <- vapply(kw$keyword, function(k) {
    v <- g$planted[g$keyword == k & g$planted != ""]
    if (length(v)) distinct_counts(v) else "measured"
  }, "")
  for (e in ordered_levels(g$engine, ENGINE_ORDER)) {
    nb <- length(unique(g$build[g$engine == e]))
    col <- paste0(e, " (", plural(nb, "build"), ")")
    out[[col]] <- vapply(kw$keyword, function(k) distinct_counts(g$measured[g$engine == e & g$keyword == k]), "")
  }
  out
}

plot_counts <- function(tab, caption) {
  cols <- names(tab)[-1]
  cells <- do.call(rbind, lapply(seq_along(cols), function(j) data.frame(
    row = tab$rank, col = j, text = as.character(tab[[cols[j]]]),
    off = j > 3 & as.character(tab[[cols[j]]]) != as.character(tab$published) &
      as.character(tab[[cols[j]]]) != "measured")))
  head <- data.frame(row = 0, col = seq_along(cols), text = cols, off = FALSE)
  n <- nrow(tab)
  ggplot() +
    geom_text(data = head, aes(x = col, y = row, label = text), fontface = "bold", size = 2.4) +
    geom_text(data = cells, aes(x = col, y = row, label = text, colour = off,
                                fontface = ifelse(off, "bold", "plain")), size = 2.3) +
    annotate("segment", x = 0.5, xend = length(cols) + 0.5, y = 0.5, yend = 0.5, linewidth = 0.3) +
    scale_colour_manual(values = c("FALSE" = "black", "TRUE" = "#D55E00"), guide = "none") +
    scale_y_reverse(NULL, breaks = NULL, limits = c(n + 0.6, -0.6), expand = c(0, 0)) +
    scale_x_continuous(NULL, breaks = NULL, limits = c(0.4, length(cols) + 0.6), expand = c(0, 0)) +
    labs(caption = caption) +
    theme_void(base_size = 7) +
    theme(plot.caption = element_text(hjust = 0, size = 6), plot.margin = margin(2, 2, 2, 2))
}

main <- function(args) {
  if (!length(args) %in% c(2, 3)) die("usage: Rscript ", SCRIPT, " <fts_gate.csv> [fts_load.csv] <out.pdf>")
  g <- read_tidy(args[1], required = GATE_COLUMNS, numeric = c("rank"))
  ld <- if (length(args) == 3) read_tidy(args[2], required = LOAD_COLUMNS, numeric = c("rows", "bytes")) else NULL
  tok <- if (is.null(ld)) character() else
    grep("^tok_(ft_min|innodb_ft_min|ft_stopword|innodb_ft_enable_stop)", names(ld), value = TRUE)
  tokw <- vapply(tok, function(c) { v <- unique(ld[[c]][ld[[c]] != ""])
    if (length(v)) paste0(sub("^tok_", "", c), "=", paste(v, collapse = "/")) else "" }, "")
  src <- unique(ifelse(g$source == "ohsumed", "OHSUMED", "seeded stand-in"))
  rows <- if (is.null(ld)) unique(g$corpus) else paste(format(unique(ld$rows), big.mark = ","), "rows")
  builds <- sort(unique(g$build))
  caption <- paste(strwrap(paste0(
    "Corpus: ", paste(src, collapse = ", "), " (", paste(rows, collapse = "; "), "). Builds: ",
    paste(builds, collapse = ", "), ". Tokenizer: ",
    if (any(tokw != "")) paste(tokw[tokw != ""], collapse = ", ") else "not given",
    ". Red: differs from the published count."), 130), collapse = "\n")
  tab <- count_table(g)
  save_figure(plot_counts(tab, caption), args[length(args)], width = 5.5, height = 0.75 + 0.125 * nrow(tab))
}

run_figure(main)
