package spillq

// Ungroup makes the disk part commit each write alone instead of grouping
// them until Flush; call it before anything spills.
func Ungroup(s *Store) { s.ungroup = true }
