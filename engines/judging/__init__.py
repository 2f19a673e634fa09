"""The judging core every task shares: the `Verdict` and `JudgeId` types, the task
protocol and registry, the typed judgment store and the tracked batch runner."""
