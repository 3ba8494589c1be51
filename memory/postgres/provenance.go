package postgres

func provArg(p []byte) *string {
	if p == nil {
		return nil
	}
	s := string(p)
	return &s
}

func provOf(p *string) []byte {
	if p == nil {
		return nil
	}
	return []byte(*p)
}
