-- Full-text search (study A1) for sysbench 1.0.20: every thread loops over the
-- study's 30 keywords IN ORDER (not at random), one query per event:
--   SELECT count(*) AS cnt FROM <table> WHERE MATCH(content) AGAINST('<word>')
-- on --fts-table in --mysql-db (tables loaded by harness.studies.a1.fts_server.load).
-- Keywords: --fts-keywords=w1,w2,... or --fts-keywords-file=<csv with a "keyword"
-- column, ordered by its "rank" column if it has one; else one word a line>;
-- default: fts_keywords.csv next to this script (harness.studies.a1).
-- --fts-ps=on: one server-side prepared statement with the word bound (needs
-- --db-ps-mode=auto, sysbench's default); off (default, as the study): plain text.
-- Intervals as CSV (csv_intervals.lua).

sysbench.cmdline.options = {
   fts_table = {"Table with a FULLTEXT index on `content`", "fts_innodb"},
   fts_keywords = {"Comma-separated keywords, queried in this order", ""},
   fts_keywords_file = {"CSV of keywords (column keyword, ordered by rank)", ""},
   fts_ps = {"Use a server-side prepared statement (on) or plain queries (off)", false},
}

local function script_dir()
   local src = debug.getinfo(1, "S").source
   if src:sub(1, 1) == "@" then
      return src:sub(2):match("^(.*)/[^/]*$") or "."
   end
   return nil
end

local function split_csv_line(line)
   local out = {}
   for field in (line .. ","):gmatch("([^,]*),") do
      out[#out + 1] = field:gsub("^%s+", ""):gsub("%s+$", "")
   end
   return out
end

local function read_keywords_file(path)
   local f, err = io.open(path, "r")
   if f == nil then
      error(string.format("--fts-keywords-file: cannot open %s (%s); give an existing CSV", path, err), 0)
   end
   local lines = {}
   for line in f:lines() do
      line = line:gsub("\r$", "")
      if line:match("%S") then lines[#lines + 1] = line end
   end
   f:close()
   local header = split_csv_line(lines[1] or "")
   local col, rank_col
   for i, name in ipairs(header) do
      if name == "keyword" then col = i end
      if name == "rank" then rank_col = i end
   end
   local rows = {}
   if col == nil then -- one word a line
      for _, line in ipairs(lines) do rows[#rows + 1] = {word = line:match("^%s*(.-)%s*$")} end
   else
      for n = 2, #lines do
         local fields = split_csv_line(lines[n])
         rows[#rows + 1] = {word = fields[col], rank = rank_col and tonumber(fields[rank_col]), n = n}
      end
      if rank_col then
         table.sort(rows, function(a, b)
            if a.rank == nil or b.rank == nil then
               error(string.format("--fts-keywords-file: %s has a rank that is not a number; fix it", path), 0)
            end
            return a.rank < b.rank
         end)
      end
   end
   local words = {}
   for _, r in ipairs(rows) do words[#words + 1] = r.word end
   return words
end

local function load_keywords()
   local words
   if sysbench.opt.fts_keywords ~= "" then
      words = {}
      for w in sysbench.opt.fts_keywords:gmatch("[^,]+") do words[#words + 1] = w:match("^%s*(.-)%s*$") end
   else
      local path = sysbench.opt.fts_keywords_file
      if path == "" then
         local dir = script_dir()
         if dir == nil then
            error("--fts-keywords-file: no default (script path unknown); give --fts-keywords or the file", 0)
         end
         path = dir .. "/fts_keywords.csv"
      end
      words = read_keywords_file(path)
   end
   if #words == 0 then
      error("--fts-keywords: no keywords given; give --fts-keywords=w1,w2 or --fts-keywords-file", 0)
   end
   for _, w in ipairs(words) do
      if w == nil or not w:match("^[%w_]+$") then
         error(string.format("--fts-keywords: %q is not a single word of letters, digits or _; fix it",
                             tostring(w)), 0)
      end
   end
   return words
end

local function check_options()
   if not sysbench.opt.fts_table:match("^[%w_$]+$") then
      error(string.format("--fts-table: %q is not a plain table name; fix it", sysbench.opt.fts_table), 0)
   end
   if sysbench.opt.fts_ps and sysbench.opt.db_ps_mode == "disable" then
      error("--fts-ps=on needs --db-ps-mode=auto (with disable sysbench would only emulate it)", 0)
   end
end

-- Main thread: refuse bad options once, before any thread connects.
function init()
   check_options()
   load_keywords()
end

function thread_init()
   check_options()
   keywords = load_keywords()
   drv = sysbench.sql.driver()
   con = drv:connect()
   next_kw = 1
   if sysbench.opt.fts_ps then
      stmt = con:prepare(string.format(
         "SELECT count(*) AS cnt FROM %s WHERE MATCH(content) AGAINST(?)", sysbench.opt.fts_table))
      param = stmt:bind_create(sysbench.sql.type.VARCHAR, 128)
      stmt:bind_param(param)
   else
      queries = {}
      for i, w in ipairs(keywords) do
         queries[i] = string.format("SELECT count(*) AS cnt FROM %s WHERE MATCH(content) AGAINST('%s')",
                                    sysbench.opt.fts_table, w)
      end
   end
end

function event()
   local i = next_kw
   if stmt then
      param:set(keywords[i])
      stmt:execute()
   else
      con:query(queries[i])
   end
   next_kw = i % #keywords + 1
end

function thread_done()
   if stmt then stmt:close() end
   con:disconnect()
end

require("csv_intervals")
