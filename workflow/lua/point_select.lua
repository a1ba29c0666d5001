-- Point-Selects (study A3): sysbench's stock oltp_point_select.lua, one
-- primary-key lookup per event, intervals as CSV.
require("oltp_point_select")
require("csv_intervals")
