// Package dlqsettle brings a MapReduce job's item log, its DLQ and its
// item counts into agreement: after a `dlq retry` or `dlq purge` killed
// between its two writes (SettleDLQ, Settle), when `dlq purge` records the
// items it took out (RecordPurged), and for `runner jobs`, which shows a
// job no process holds as a settle would leave it (SettledCounts).
package dlqsettle
