-- OLTP_RO and Simple-Ranges (studies A2, A3, B): sysbench's stock
-- oltp_read_only.lua; the mix is chosen by options, intervals as CSV.
require("oltp_read_only")
require("csv_intervals")
