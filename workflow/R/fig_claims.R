# The claims at a glance, the paper's first results figure: one row per claim
# (and build) that this run could judge, grouped by study, on a log-ratio axis. Per row: the acceptance
# band of its rule (grey: above / below the threshold, or within the band),
# the published ratio (open diamond; a published range as a thin bar), the
# measured ratio with its interval (filled point, coloured by verdict), and
# the verdict in words at the right, so the figure reads without colour. Rows *not
# measurable here* are not drawn: the caption counts them by what they lack
# (harness.report.macros.not_drawn, \ClaimsNotDrawn), so the drawn rows stay legible (7 pt
# at 7 in; the height grows with the rows). Claims without a ratio (ranks, EXPLAIN
# checks) show their verdict only. Several hosts
# (claims.csv's host column): a row per host with its interval, and the claim's combined
# row (host "all": its verdict and on how many hosts, no pooled interval).
#
# Usage: Rscript workflow/R/fig_claims.R <claims.csv> <out.pdf>

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "theme.R"))

CLAIMS_COLUMNS <- c("claim", "study", "published", "published_ratio", "ratio", "ratio_lo",
                    "ratio_hi", "threshold", "threshold_hi", "side", "verdict", "build")

NOT_MEASURABLE <- "not measurable here"
ALL_HOSTS <- "all"   # the host of a claim's combined row (harness.analysis.claims.ALL_HOSTS)

num <- function(x) suppressWarnings(as.numeric(ifelse(is.na(x), "", x)))

# "3–6×" (or "3-6x") in the published text: the published range, else NA.
published_range <- function(text) {
  m <- regmatches(text, regexec("([0-9.]+)\\s*[\u2013-]\\s*([0-9.]+)\\s*[\u00d7x]", text))
  lo <- vapply(m, function(v) if (length(v) == 3) as.numeric(v[2]) else NA_real_, 0)
  hi <- vapply(m, function(v) if (length(v) == 3) as.numeric(v[3]) else NA_real_, 0)
  list(lo = lo, hi = hi)
}

read_claims <- function(path) {
  if (!file.exists(path)) fail("input file not found: ", path)
  d <- tryCatch(as.data.frame(data.table::fread(path, colClasses = "character", na.strings = NULL,
                                                encoding = "UTF-8", showProgress = FALSE)),
                error = function(e) fail(path, ": not a readable CSV (", conditionMessage(e), ")"))
  missing <- setdiff(CLAIMS_COLUMNS, names(d))
  if (length(missing)) fail(path, ": missing column(s): ", paste(missing, collapse = ", "))
  if (nrow(d) == 0) fail(path, ": no rows")
  bad <- setdiff(unique(d$verdict), names(VERDICT_COLOURS))
  if (length(bad)) fail(path, ": unknown verdict(s): ", paste(bad, collapse = ", "))
  for (col in c("published_ratio", "ratio", "ratio_lo", "ratio_hi", "threshold", "threshold_hi"))
    d[[col]] <- num(d[[col]])
  d
}

# The rows the figure draws: every row but those not measurable here (each has a verdict;
# a ratio row its interval). None left: one placeholder row saying so.
drawn_rows <- function(d) d[d$verdict != NOT_MEASURABLE, , drop = FALSE]

claims_plot <- function(d) {
  if (!"host" %in% names(d)) d$host <- ""
  d <- drawn_rows(d)
  if (nrow(d) == 0)
    return(ggplot() + annotate("text", x = 0, y = 0, size = 3,
                               label = "No claim is measurable here (the caption counts them by what they lack)") +
             theme_void())
  hosts <- unique(d$host[d$host != ALL_HOSTS])
  key <- paste(d$claim, d$host)
  several <- d$claim %in% d$claim[duplicated(key)]
  d$row <- ifelse(several & d$build != "", paste0(d$claim, " (", d$build, ")"), d$claim)
  # several hosts (claims.csv's host): a row per host with its own interval, then the
  # claim's combined row (no interval: its verdict and k of n hosts only)
  if (length(hosts) > 1)
    d$row <- paste0(d$row, ifelse(d$host == ALL_HOSTS, ": all hosts", paste0(" @ ", d$host)))
  # a numeric position per row (first row on top), labelled with its claim: a
  # discrete y would be re-sorted alphabetically by ggplot's free facet scales
  d$pos <- rev(seq_len(nrow(d)))
  d$study <- factor(d$study, levels = unique(d$study))
  d$verdict <- factor(d$verdict, levels = names(VERDICT_COLOURS))
  # the verdict in words at the right (the combined row's: on how many hosts)
  d$said <- as.character(d$verdict)
  reason <- if ("reason" %in% names(d)) d$reason else rep("", nrow(d))
  # a decided combined row: on how many of the hosts that could measure it (an inconclusive
  # one: its reason, in the claims table, says whether they disagree)
  kn <- regmatches(reason, regexec("reproduced on ([0-9]+) of the ([0-9]+) hosts.*not reproduced on ([0-9]+)",
                                   reason))
  kn <- vapply(seq_along(kn), function(i) {
    v <- kn[[i]]
    k <- switch(as.character(d$verdict[i]), "reproduced" = v[2], "not reproduced" = v[4], NA)
    if (length(v) == 4 && !is.na(k)) paste0(" (", k, "/", v[3], " hosts)") else ""
  }, "")
  d$said <- ifelse(d$host == ALL_HOSTS, paste0(d$said, kn), d$said)
  rg <- published_range(d$published)
  d$pub_lo <- rg$lo
  d$pub_hi <- rg$hi
  # the acceptance band of each rule, in ratio units (Inf: the panel's edge)
  d$band_lo <- ifelse(d$side == "below", 0, d$threshold)
  d$band_hi <- ifelse(d$side == "above", Inf, ifelse(d$side == "within", d$threshold_hi, d$threshold))
  band <- d[!is.na(d$threshold) & d$side %in% c("above", "below", "within"), , drop = FALSE]
  vals <- c(d$ratio, d$ratio_lo, d$ratio_hi, d$published_ratio, d$threshold, d$threshold_hi,
            d$pub_lo, d$pub_hi)
  vals <- vals[is.finite(vals) & vals > 0]
  lim <- if (length(vals)) range(vals) * c(0.8, 1.25) else c(0.5, 2)
  meas <- d[is.finite(d$ratio) & d$ratio > 0, , drop = FALSE]
  pub <- d[is.finite(d$published_ratio) & d$published_ratio > 0, , drop = FALSE]
  rng <- d[is.finite(d$pub_lo) & is.finite(d$pub_hi), , drop = FALSE]
  p <- ggplot(d, aes(y = pos)) +
    geom_vline(xintercept = 1, colour = "grey60", linewidth = 0.3) +
    geom_segment(data = band, aes(x = band_lo, xend = band_hi, y = pos, yend = pos), colour = "grey85",
                 linewidth = 2.6) +
    geom_point(data = band, aes(x = threshold), shape = "|", size = 2.6, colour = "grey35") +
    geom_point(data = band[is.finite(band$threshold_hi), , drop = FALSE], aes(x = threshold_hi),
               shape = "|", size = 2.6, colour = "grey35") +
    geom_segment(data = rng, aes(x = pub_lo, xend = pub_hi, y = pos, yend = pos), colour = "grey25",
                 linewidth = 0.5) +
    geom_point(data = pub, aes(x = published_ratio, shape = "published"), colour = "grey10",
               size = 1.9, stroke = 0.5) +
    geom_errorbarh(data = meas, aes(xmin = ratio_lo, xmax = ratio_hi, colour = verdict),
                   height = 0.35, linewidth = 0.45) +
    geom_point(data = meas, aes(x = ratio, colour = verdict, shape = "measured"), size = 1.7) +
    geom_text(aes(x = Inf, label = said, colour = verdict), hjust = -0.06, size = 2.5,
              show.legend = FALSE) +
    scale_x_log10("Ratio (log scale; grey band: the rule's accepted side; line at 1)",
                  labels = function(x) format(x, trim = TRUE, drop0trailing = TRUE)) +
    scale_y_continuous(NULL, breaks = d$pos, labels = d$row, expand = expansion(add = 0.6),
                       minor_breaks = NULL) +
    scale_colour_verdict(breaks = setdiff(names(VERDICT_COLOURS), NOT_MEASURABLE),
                         limits = names(VERDICT_COLOURS)) +
    scale_shape_manual(NULL, values = c(published = 5, measured = 16),
                       breaks = c("published", "measured"),
                       labels = c("published ratio (bar: published range)",
                                  "measured ratio [interval]")) +
    coord_cartesian(xlim = lim, clip = "off") +
    theme_artifact(base_size = 8) +
    theme(plot.margin = margin(3, 96, 3, 3), panel.grid.major.y = element_blank(),
          legend.box = "vertical", legend.spacing.y = unit(0, "pt"))
  if (length(unique(d$study)) > 1)
    p <- p + facet_grid(study ~ ., scales = "free_y", space = "free_y", switch = "y") +
      theme(strip.placement = "outside")
  p
}

main <- function(args) {
  if (length(args) != 2) die("usage: Rscript ", SCRIPT, " <claims.csv> <out.pdf>")
  d <- read_claims(args[1])
  save_figure(claims_plot(d), args[2], width = 7, height = 1.4 + 0.15 * max(1, nrow(drawn_rows(d))))
}

run_figure(main)
