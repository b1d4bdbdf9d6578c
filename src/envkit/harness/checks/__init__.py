"""The checks the harness runs, one module per check (or per group of small ones): each turns facts
(:mod:`envkit.harness.probes`) and the rules (:mod:`envkit.harness.rules`) into check records
(:mod:`envkit.harness.report`). Standard library and torch only; torch is imported where a check needs it."""
