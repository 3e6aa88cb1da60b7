package pebbleq

// ScratchCap returns the capacity of s's record buffer, kept between
// pushes.
func ScratchCap(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cap(s.valBuf)
}
