"""Chat: the event log and bus now; runs, approvals and queues join later."""
