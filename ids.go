package toolgate

// WellFormedID reports whether text has the shape of the ids the gateway
// gives its sessions, calls and runs: a UUID as github.com/google/uuid
// prints it, 36 characters of lowercase hexadecimal digits with hyphens
// (01a20b24-c8e2-79cb-b053-d813ec727e4e). Ids are compared as text, so
// any other text (another spelling of a UUID included) names nothing: a
// request naming it is answered NOT_FOUND without reading the database.
func WellFormedID(text string) bool {
	if len(text) != 36 {
		return false
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
