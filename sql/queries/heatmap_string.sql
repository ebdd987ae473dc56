-- A kernel's name, for the communication test of heatmap_window.sql rows.
SELECT str FROM strings WHERE id = ?1;
