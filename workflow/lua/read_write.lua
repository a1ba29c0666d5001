-- Read-write mix (study B3): sysbench's stock oltp_read_write.lua, intervals as CSV.
require("oltp_read_write")
require("csv_intervals")
