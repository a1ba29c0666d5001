-- Report each --report-interval as one CSV row instead of free text:
-- time,threads,tps,qps,reads,writes,other,latency_pct_ms,err/s,reconn/s
sysbench.hooks.report_intermediate = sysbench.report_csv
