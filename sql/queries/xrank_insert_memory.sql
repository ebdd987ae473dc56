INSERT INTO memory_peaks (rank, device, step, phase, samples, allocated_bytes, reserved_bytes, peak_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8);
