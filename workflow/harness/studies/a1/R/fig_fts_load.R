# Study A1: bulk-load and FULLTEXT index-build seconds per build and engine
# (LOAD DATA into the table, then ALTER TABLE ... ADD FULLTEXT INDEX, as the
# study did), from the prepared datasets (data/tidy/fts_load.csv). The caption
# states the corpus (stand-in or OHSUMED, rows, MB) and the tokenizer settings
# the servers reported.
#
# Usage: Rscript workflow/harness/studies/a1/R/fig_fts_load.R <fts_load.csv> <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))
LOAD_COLUMNS <- c("build", "engine", "corpus", "source", "rows", "bytes", "load_s", "index_s")

corpus_words <- function(d) {
  u <- unique(d[, c("source", "rows", "bytes")])
  paste(vapply(seq_len(nrow(u)), function(i)
    sprintf("%s corpus, %s rows, %.1f MB", ifelse(u$source[i] == "ohsumed", "OHSUMED", "stand-in"),
            format(u$rows[i], big.mark = ","), u$bytes[i] / 1e6), ""), collapse = "; ")
}

# "name=value" of every tokenizer column (tok_*), the values distinct over the rows
tokenizer_words <- function(d) {
  cols <- grep("^tok_(ft_|innodb_ft_)", names(d), value = TRUE)
  parts <- vapply(cols, function(c) {
    v <- unique(d[[c]][d[[c]] != ""])
    if (length(v) == 0) "" else paste0(sub("^tok_", "", c), "=", paste(v, collapse = "/"))
  }, "")
  paste(parts[parts != ""], collapse = ", ")
}

plot_fts_load <- function(d) {
  # a build loaded more than one corpus (experiments of other sizes): one bar group each
  d$x <- if (nrow(unique(d[, c("corpus", "rows")])) > 1)
    paste0(d$build, "\n", format(d$rows, big.mark = ","), " rows") else d$build
  long <- rbind(data.frame(d[, c("build", "engine", "x")], step = "bulk load (LOAD DATA)", s = d$load_s),
                data.frame(d[, c("build", "engine", "x")], step = "ADD FULLTEXT INDEX", s = d$index_s))
  long$step <- factor(long$step, levels = c("bulk load (LOAD DATA)", "ADD FULLTEXT INDEX"))
  long$engine <- factor(long$engine, levels = ordered_levels(long$engine, ENGINE_ORDER))
  cap <- paste(strwrap(paste0(corpus_words(d), ". Tokenizer: ", tokenizer_words(d)), 72), collapse = "\n")
  ggplot(long, aes(x = x, y = s, fill = engine)) +
    geom_col(position = position_dodge(width = 0.8, preserve = "single"), width = 0.7,
             colour = "grey20", linewidth = 0.2) +
    geom_text(aes(label = sprintf("%.2f", s)), position = position_dodge(width = 0.8),
              vjust = -0.4, size = 2.1) +
    scale_fill_engine() +
    scale_x_discrete(NULL) +
    scale_y_continuous("Seconds", expand = expansion(mult = c(0, 0.3))) +
    facet_wrap(~step, ncol = 1, scales = "free_y") +
    labs(caption = cap) +
    theme_artifact(base_size = 8) +
    theme(axis.text.x = element_text(angle = 20, hjust = 1))
}

main <- function(args) {
  if (length(args) != 2) die("usage: Rscript ", SCRIPT, " <fts_load.csv> <out.pdf>")
  d <- read_tidy(args[1], required = LOAD_COLUMNS, numeric = c("rows", "bytes", "load_s", "index_s"))
  save_figure(plot_fts_load(d), args[2], width = 3.3, height = 2.8)  # a column wide, as printed
}

run_figure(main)
