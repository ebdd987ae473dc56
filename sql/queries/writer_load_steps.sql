-- One rank's ProfilerSteps, with the load position of their slice.
SELECT st.number, st.ts, st.dur,
       (SELECT count(*) FROM slices s JOIN tracks t ON t.id = s.track
        WHERE t.rank = st.rank AND s.id < st.slice)
FROM steps st
WHERE st.rank = ?1
ORDER BY st.number;
