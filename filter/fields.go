package filter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Field names are matched on words, not substrings: a name is split into
// lower-case words at separators, case changes and letter/digit changes
// ("x-API-Key2" → x api key 2), and a pattern matches a run of consecutive
// words whose concatenation equals the pattern's ("apikey" matches both
// "apiKey" and "APIKEY"). So "tokens_used", "pinned", "spinner" and
// "author" never match "token", "pin" or "auth". Words after the match
// must be harmless continuations ("password_hash", "password2"), so
// "password_updated_at" and "token_expires_at", which hold no secret, do
// not match; and some patterns are cancelled by the word before them
// ("next_page_token" is a cursor, "mac_address" is not a postal address).

type fieldPattern struct {
	class Class
	conf  float64
	// idLike lets an identifier suffix follow: "passport_number",
	// "tax_id", "account_no".
	idLike bool
	// notAfter lists words that cancel the match when they come right
	// before it.
	notAfter []string
}

var (
	cursorWords  = []string{"next", "prev", "previous", "page", "continuation", "pagination", "cursor", "sync", "start", "resume", "max", "min", "num", "total", "input", "output", "prompt", "completion", "cache", "cached", "reasoning", "stop", "count"}
	machineWords = []string{"mac", "server", "listen", "bind", "wallet", "contract", "memory", "base", "web", "url", "host", "node", "local", "peer", "proxy", "gateway", "endpoint", "hardware", "physical", "bitcoin", "btc", "eth", "ethereum", "network", "broadcast", "multicast", "return", "ip", "email", "mail", "remote", "public", "private", "virtual", "socket", "loopback", "bluetooth", "device", "target", "source", "destination", "dest", "src", "dst", "forwarding", "forward", "redirect", "callback"}
	publicWords  = []string{"public", "publishable"}
)

// fieldPatterns maps phrases (words separated by spaces) to what they mean.
var fieldPatterns = map[string]fieldPattern{
	// passwords
	"password":      {class: ClassPassword, conf: 0.95},
	"passwords":     {class: ClassPassword, conf: 0.9},
	"passwd":        {class: ClassPassword, conf: 0.95},
	"pwd":           {class: ClassPassword, conf: 0.9},
	"passphrase":    {class: ClassPassword, conf: 0.95},
	"pass phrase":   {class: ClassPassword, conf: 0.95},
	"passcode":      {class: ClassPassword, conf: 0.9},
	"user password": {class: ClassPassword, conf: 0.95},

	// secrets
	"secret":            {class: ClassSecret, conf: 0.9, notAfter: publicWords},
	"secrets":           {class: ClassSecret, conf: 0.9},
	"client secret":     {class: ClassSecret, conf: 0.95},
	"app secret":        {class: ClassSecret, conf: 0.95},
	"shared secret":     {class: ClassSecret, conf: 0.95},
	"consumer secret":   {class: ClassSecret, conf: 0.95},
	"webhook secret":    {class: ClassSecret, conf: 0.95},
	"signing secret":    {class: ClassSecret, conf: 0.95},
	"secret key":        {class: ClassSecret, conf: 0.95},
	"credential":        {class: ClassSecret, conf: 0.85},
	"credentials":       {class: ClassSecret, conf: 0.85},
	"creds":             {class: ClassSecret, conf: 0.85},
	"security answer":   {class: ClassSecret, conf: 0.9},
	"secret answer":     {class: ClassSecret, conf: 0.9},
	"maiden name":       {class: ClassSecret, conf: 0.8},
	"otp":               {class: ClassSecret, conf: 0.85},
	"totp":              {class: ClassSecret, conf: 0.85},
	"mfa code":          {class: ClassSecret, conf: 0.9},
	"2fa code":          {class: ClassSecret, conf: 0.9},
	"recovery code":     {class: ClassSecret, conf: 0.9},
	"recovery codes":    {class: ClassSecret, conf: 0.9},
	"backup code":       {class: ClassSecret, conf: 0.9},
	"backup codes":      {class: ClassSecret, conf: 0.9},
	"connection string": {class: ClassSecret, conf: 0.85},
	"conn str":          {class: ClassSecret, conf: 0.85},
	"encryption key":    {class: ClassSecret, conf: 0.9},
	"master key":        {class: ClassSecret, conf: 0.9},

	// tokens and sessions
	"token":               {class: ClassToken, conf: 0.85, notAfter: cursorWords},
	"access token":        {class: ClassToken, conf: 0.95},
	"refresh token":       {class: ClassToken, conf: 0.95},
	"id token":            {class: ClassToken, conf: 0.9},
	"auth token":          {class: ClassToken, conf: 0.95},
	"session token":       {class: ClassToken, conf: 0.95},
	"bearer token":        {class: ClassToken, conf: 0.95},
	"csrf token":          {class: ClassToken, conf: 0.9},
	"xsrf token":          {class: ClassToken, conf: 0.9},
	"oauth token":         {class: ClassToken, conf: 0.95},
	"authorization":       {class: ClassToken, conf: 0.9},
	"proxy authorization": {class: ClassToken, conf: 0.9},
	"auth":                {class: ClassToken, conf: 0.7},
	"cookie":              {class: ClassToken, conf: 0.85},
	"cookies":             {class: ClassToken, conf: 0.85},
	"set cookie":          {class: ClassToken, conf: 0.9},
	"session id":          {class: ClassToken, conf: 0.9},
	"session key":         {class: ClassToken, conf: 0.9},
	"session cookie":      {class: ClassToken, conf: 0.9},
	"jsessionid":          {class: ClassToken, conf: 0.9},
	"phpsessid":           {class: ClassToken, conf: 0.9},

	// API and cloud keys
	"api key":             {class: ClassAPIKey, conf: 0.95},
	"api token":           {class: ClassAPIKey, conf: 0.95},
	"api secret":          {class: ClassAPIKey, conf: 0.95},
	"app key":             {class: ClassAPIKey, conf: 0.85},
	"application key":     {class: ClassAPIKey, conf: 0.85},
	"subscription key":    {class: ClassAPIKey, conf: 0.9},
	"developer key":       {class: ClassAPIKey, conf: 0.9},
	"client key":          {class: ClassAPIKey, conf: 0.85},
	"consumer key":        {class: ClassAPIKey, conf: 0.85},
	"access key":          {class: ClassCloudKey, conf: 0.9},
	"secret access key":   {class: ClassCloudKey, conf: 0.95},
	"aws secret":          {class: ClassCloudKey, conf: 0.95},
	"account key":         {class: ClassCloudKey, conf: 0.9},
	"storage key":         {class: ClassCloudKey, conf: 0.9},
	"sas token":           {class: ClassCloudKey, conf: 0.9},
	"shared access key":   {class: ClassCloudKey, conf: 0.95},
	"service account key": {class: ClassCloudKey, conf: 0.95},
	"private key":         {class: ClassPrivateKey, conf: 0.95},
	"privkey":             {class: ClassPrivateKey, conf: 0.95},
	"priv key":            {class: ClassPrivateKey, conf: 0.95},
	"signing key":         {class: ClassPrivateKey, conf: 0.9},
	"private key id":      {class: ClassPrivateKey, conf: 0.8},

	// government and personal identifiers
	"ssn":                             {class: ClassSSN, conf: 0.95, idLike: true},
	"social security number":          {class: ClassSSN, conf: 0.95},
	"social security no":              {class: ClassSSN, conf: 0.95},
	"social security":                 {class: ClassSSN, conf: 0.9, idLike: true},
	"national id":                     {class: ClassNationalID, conf: 0.9, idLike: true},
	"national identification number":  {class: ClassNationalID, conf: 0.9},
	"national insurance number":       {class: ClassNationalID, conf: 0.9},
	"nino":                            {class: ClassNationalID, conf: 0.85},
	"passport":                        {class: ClassNationalID, conf: 0.9, idLike: true},
	"tax id":                          {class: ClassNationalID, conf: 0.9, idLike: true},
	"taxpayer id":                     {class: ClassNationalID, conf: 0.9, idLike: true},
	"tax number":                      {class: ClassNationalID, conf: 0.85},
	"driver license":                  {class: ClassNationalID, conf: 0.9, idLike: true},
	"drivers license":                 {class: ClassNationalID, conf: 0.9, idLike: true},
	"driving license":                 {class: ClassNationalID, conf: 0.9, idLike: true},
	"driver licence":                  {class: ClassNationalID, conf: 0.9, idLike: true},
	"drivers licence":                 {class: ClassNationalID, conf: 0.9, idLike: true},
	"driving licence":                 {class: ClassNationalID, conf: 0.9, idLike: true},
	"identity card":                   {class: ClassNationalID, conf: 0.85, idLike: true},
	"id card":                         {class: ClassNationalID, conf: 0.8, idLike: true},
	"citizen id":                      {class: ClassNationalID, conf: 0.85, idLike: true},
	"aadhaar":                         {class: ClassNationalID, conf: 0.9, idLike: true},
	"date of birth":                   {class: ClassDateOfBirth, conf: 0.95},
	"dob":                             {class: ClassDateOfBirth, conf: 0.9},
	"birth date":                      {class: ClassDateOfBirth, conf: 0.95},
	"birthdate":                       {class: ClassDateOfBirth, conf: 0.95},
	"birthday":                        {class: ClassDateOfBirth, conf: 0.85},
	"email":                           {class: ClassEmail, conf: 0.9},
	"emails":                          {class: ClassEmail, conf: 0.9},
	"email address":                   {class: ClassEmail, conf: 0.95},
	"phone":                           {class: ClassPhone, conf: 0.85, idLike: true},
	"phones":                          {class: ClassPhone, conf: 0.85},
	"telephone":                       {class: ClassPhone, conf: 0.85, idLike: true},
	"tel":                             {class: ClassPhone, conf: 0.7},
	"mobile number":                   {class: ClassPhone, conf: 0.85},
	"mobile phone":                    {class: ClassPhone, conf: 0.85},
	"cell phone":                      {class: ClassPhone, conf: 0.85},
	"cellphone":                       {class: ClassPhone, conf: 0.85},
	"fax":                             {class: ClassPhone, conf: 0.75, idLike: true},
	"msisdn":                          {class: ClassPhone, conf: 0.9},
	"ip":                              {class: ClassIP, conf: 0.8},
	"ip address":                      {class: ClassIP, conf: 0.85},
	"ip addr":                         {class: ClassIP, conf: 0.85},
	"client ip":                       {class: ClassIP, conf: 0.85},
	"remote ip":                       {class: ClassIP, conf: 0.85},
	"remote addr":                     {class: ClassIP, conf: 0.8},
	"x forwarded for":                 {class: ClassIP, conf: 0.8},
	"ipv4":                            {class: ClassIP, conf: 0.8},
	"ipv6":                            {class: ClassIP, conf: 0.8},
	"address":                         {class: ClassAddress, conf: 0.7, notAfter: machineWords},
	"home address":                    {class: ClassAddress, conf: 0.9},
	"street address":                  {class: ClassAddress, conf: 0.9},
	"postal address":                  {class: ClassAddress, conf: 0.9},
	"mailing address":                 {class: ClassAddress, conf: 0.9},
	"billing address":                 {class: ClassAddress, conf: 0.9},
	"shipping address":                {class: ClassAddress, conf: 0.9},
	"address line":                    {class: ClassAddress, conf: 0.85, idLike: true},
	"street":                          {class: ClassAddress, conf: 0.7},
	"card number":                     {class: ClassCard, conf: 0.95},
	"credit card":                     {class: ClassCard, conf: 0.9, idLike: true},
	"debit card":                      {class: ClassCard, conf: 0.9, idLike: true},
	"cc number":                       {class: ClassCard, conf: 0.9},
	"cc num":                          {class: ClassCard, conf: 0.9},
	"card num":                        {class: ClassCard, conf: 0.9},
	"card no":                         {class: ClassCard, conf: 0.9},
	"primary account number":          {class: ClassCard, conf: 0.9},
	"cvv":                             {class: ClassCVV, conf: 0.95},
	"cvc":                             {class: ClassCVV, conf: 0.95},
	"cvv2":                            {class: ClassCVV, conf: 0.95},
	"cvc2":                            {class: ClassCVV, conf: 0.95},
	"csc":                             {class: ClassCVV, conf: 0.8},
	"card verification":               {class: ClassCVV, conf: 0.9, idLike: true},
	"card verification value":         {class: ClassCVV, conf: 0.95},
	"card security code":              {class: ClassCVV, conf: 0.95},
	"security code":                   {class: ClassCVV, conf: 0.8},
	"pin":                             {class: ClassPIN, conf: 0.75, idLike: true},
	"atm pin":                         {class: ClassPIN, conf: 0.9},
	"iban":                            {class: ClassIBAN, conf: 0.95, idLike: true},
	"account number":                  {class: ClassAccountNumber, conf: 0.85},
	"acct number":                     {class: ClassAccountNumber, conf: 0.85},
	"acct no":                         {class: ClassAccountNumber, conf: 0.85},
	"account no":                      {class: ClassAccountNumber, conf: 0.85},
	"bank account":                    {class: ClassAccountNumber, conf: 0.85, idLike: true},
	"routing number":                  {class: ClassAccountNumber, conf: 0.85},
	"aba number":                      {class: ClassAccountNumber, conf: 0.85},
	"sort code":                       {class: ClassAccountNumber, conf: 0.85},
	"bsb":                             {class: ClassAccountNumber, conf: 0.8, idLike: true},
	"bank account number":             {class: ClassAccountNumber, conf: 0.9},
	"routing transit number":          {class: ClassAccountNumber, conf: 0.85},
	"social insurance number":         {class: ClassNationalID, conf: 0.9},
	"personal identification number":  {class: ClassPIN, conf: 0.85},
	"national identity number":        {class: ClassNationalID, conf: 0.9},
	"personal public service number":  {class: ClassNationalID, conf: 0.9},
	"individual taxpayer id number":   {class: ClassNationalID, conf: 0.9},
	"employer identification number":  {class: ClassNationalID, conf: 0.7},
	"medical record number":           {class: ClassNationalID, conf: 0.85},
	"health insurance number":         {class: ClassNationalID, conf: 0.85},
	"vehicle identification number":   {class: ClassNationalID, conf: 0.6},
	"bank identifier":                 {class: ClassAccountNumber, conf: 0.5},
	"international bank account no":   {class: ClassIBAN, conf: 0.95},
	"international bank account":      {class: ClassIBAN, conf: 0.95, idLike: true},
	"social security account number":  {class: ClassSSN, conf: 0.95},
	"card holder verification":        {class: ClassCVV, conf: 0.8, idLike: true},
	"card verification code":          {class: ClassCVV, conf: 0.95},
	"one time password":               {class: ClassSecret, conf: 0.9},
	"one time code":                   {class: ClassSecret, conf: 0.85},
	"verification code":               {class: ClassSecret, conf: 0.75},
	"private key pem":                 {class: ClassPrivateKey, conf: 0.95},
	"database password":               {class: ClassPassword, conf: 0.95},
	"smtp password":                   {class: ClassPassword, conf: 0.95},
	"x api key":                       {class: ClassAPIKey, conf: 0.95},
	"x auth token":                    {class: ClassToken, conf: 0.95},
	"x amz security token":            {class: ClassCloudKey, conf: 0.95},
	"aws session token":               {class: ClassCloudKey, conf: 0.95},
	"azure client secret":             {class: ClassSecret, conf: 0.95},
	"github token":                    {class: ClassAPIKey, conf: 0.95},
	"slack token":                     {class: ClassAPIKey, conf: 0.95},
	"stripe key":                      {class: ClassAPIKey, conf: 0.9},
	"openai api key":                  {class: ClassAPIKey, conf: 0.95},
	"ssh private key":                 {class: ClassPrivateKey, conf: 0.95},
	"gpg private key":                 {class: ClassPrivateKey, conf: 0.95},
	"pgp private key":                 {class: ClassPrivateKey, conf: 0.95},
	"tls key":                         {class: ClassPrivateKey, conf: 0.85},
	"ssl key":                         {class: ClassPrivateKey, conf: 0.85},
	"mothers maiden name":             {class: ClassSecret, conf: 0.9},
	"security question answer":        {class: ClassSecret, conf: 0.9},
	"national insurance no":           {class: ClassNationalID, conf: 0.9},
	"passport no":                     {class: ClassNationalID, conf: 0.9},
	"driver license no":               {class: ClassNationalID, conf: 0.9},
	"track data":                      {class: ClassCard, conf: 0.8},
	"magstripe":                       {class: ClassCard, conf: 0.8},
	"pin block":                       {class: ClassPIN, conf: 0.9},
	"swift password":                  {class: ClassPassword, conf: 0.95},
	"wifi password":                   {class: ClassPassword, conf: 0.95},
	"root password":                   {class: ClassPassword, conf: 0.95},
	"admin password":                  {class: ClassPassword, conf: 0.95},
	"login password":                  {class: ClassPassword, conf: 0.95},
	"password hash":                   {class: ClassPassword, conf: 0.8},
	"hashed password":                 {class: ClassPassword, conf: 0.8},
	"client certificate key":          {class: ClassPrivateKey, conf: 0.9},
	"refresh tokens":                  {class: ClassToken, conf: 0.9},
	"access tokens":                   {class: ClassToken, conf: 0.9},
	"api keys":                        {class: ClassAPIKey, conf: 0.9},
	"private keys":                    {class: ClassPrivateKey, conf: 0.9},
	"social security numbers":         {class: ClassSSN, conf: 0.9},
	"card numbers":                    {class: ClassCard, conf: 0.9},
	"phone numbers":                   {class: ClassPhone, conf: 0.85},
	"email addresses":                 {class: ClassEmail, conf: 0.9},
	"ip addresses":                    {class: ClassIP, conf: 0.85},
	"bearer":                          {class: ClassToken, conf: 0.8},
	"jwt":                             {class: ClassJWT, conf: 0.9},
	"personnummer":                    {class: ClassNationalID, conf: 0.9},
	"nric":                            {class: ClassNationalID, conf: 0.85},
	"curp":                            {class: ClassNationalID, conf: 0.85},
	"cpf":                             {class: ClassNationalID, conf: 0.85},
	"steuer id":                       {class: ClassNationalID, conf: 0.85},
	"codice fiscale":                  {class: ClassNationalID, conf: 0.9},
	"dni":                             {class: ClassNationalID, conf: 0.8},
	"nif":                             {class: ClassNationalID, conf: 0.8},
	"pesel":                           {class: ClassNationalID, conf: 0.85},
	"bsn":                             {class: ClassNationalID, conf: 0.8},
	"mother maiden name":              {class: ClassSecret, conf: 0.9},
	"otp secret":                      {class: ClassSecret, conf: 0.95},
	"totp secret":                     {class: ClassSecret, conf: 0.95},
	"mfa secret":                      {class: ClassSecret, conf: 0.95},
	"seed phrase":                     {class: ClassSecret, conf: 0.95},
	"recovery phrase":                 {class: ClassSecret, conf: 0.95},
	"wallet seed":                     {class: ClassSecret, conf: 0.9},
	"private key hex":                 {class: ClassPrivateKey, conf: 0.95},
	"hmac key":                        {class: ClassSecret, conf: 0.9},
	"hmac secret":                     {class: ClassSecret, conf: 0.95},
	"jwt secret":                      {class: ClassSecret, conf: 0.95},
	"session secret":                  {class: ClassSecret, conf: 0.95},
	"cookie secret":                   {class: ClassSecret, conf: 0.95},
	"encryption password":             {class: ClassPassword, conf: 0.95},
	"keystore password":               {class: ClassPassword, conf: 0.95},
	"truststore password":             {class: ClassPassword, conf: 0.95},
	"vpn password":                    {class: ClassPassword, conf: 0.95},
	"ldap password":                   {class: ClassPassword, conf: 0.95},
	"proxy password":                  {class: ClassPassword, conf: 0.95},
	"bind password":                   {class: ClassPassword, conf: 0.95},
	"registry password":               {class: ClassPassword, conf: 0.95},
	"docker password":                 {class: ClassPassword, conf: 0.95},
	"npm token":                       {class: ClassAPIKey, conf: 0.95},
	"pypi token":                      {class: ClassAPIKey, conf: 0.95},
	"gitlab token":                    {class: ClassAPIKey, conf: 0.95},
	"personal access token":           {class: ClassAPIKey, conf: 0.95},
	"service key":                     {class: ClassAPIKey, conf: 0.85},
	"service role key":                {class: ClassAPIKey, conf: 0.9},
	"license key":                     {class: ClassAPIKey, conf: 0.6},
	"product key":                     {class: ClassAPIKey, conf: 0.6},
	"activation key":                  {class: ClassAPIKey, conf: 0.6},
	"account password":                {class: ClassPassword, conf: 0.95},
	"user pass":                       {class: ClassPassword, conf: 0.8},
	"basic auth":                      {class: ClassToken, conf: 0.9},
	"http auth":                       {class: ClassToken, conf: 0.85},
	"auth header":                     {class: ClassToken, conf: 0.9},
	"authorization header":            {class: ClassToken, conf: 0.9},
	"auth key":                        {class: ClassAPIKey, conf: 0.9},
	"auth secret":                     {class: ClassSecret, conf: 0.95},
	"auth code":                       {class: ClassToken, conf: 0.85},
	"authorization code":              {class: ClassToken, conf: 0.85},
	"device code":                     {class: ClassToken, conf: 0.7},
	"refresh key":                     {class: ClassToken, conf: 0.8},
	"remember token":                  {class: ClassToken, conf: 0.9},
	"reset token":                     {class: ClassToken, conf: 0.9},
	"password reset token":            {class: ClassToken, conf: 0.95},
	"invite token":                    {class: ClassToken, conf: 0.8},
	"verification token":              {class: ClassToken, conf: 0.85},
	"confirmation token":              {class: ClassToken, conf: 0.85},
	"sas url":                         {class: ClassCloudKey, conf: 0.8},
	"kubeconfig":                      {class: ClassSecret, conf: 0.8},
	"dockerconfigjson":                {class: ClassSecret, conf: 0.9},
	"netrc":                           {class: ClassSecret, conf: 0.85},
	"htpasswd":                        {class: ClassPassword, conf: 0.9},
	"npmrc":                           {class: ClassSecret, conf: 0.7},
	"pgpass":                          {class: ClassPassword, conf: 0.9},
	"card cvv":                        {class: ClassCVV, conf: 0.95},
	"card pin":                        {class: ClassPIN, conf: 0.95},
	"debit pin":                       {class: ClassPIN, conf: 0.95},
	"sim pin":                         {class: ClassPIN, conf: 0.9},
	"puk":                             {class: ClassPIN, conf: 0.85},
	"puk code":                        {class: ClassPIN, conf: 0.9},
	"unlock code":                     {class: ClassPIN, conf: 0.8},
	"door code":                       {class: ClassPIN, conf: 0.7},
	"alarm code":                      {class: ClassPIN, conf: 0.8},
	"safe combination":                {class: ClassPIN, conf: 0.8},
	"x csrf token":                    {class: ClassToken, conf: 0.9},
	"x xsrf token":                    {class: ClassToken, conf: 0.9},
	"x access token":                  {class: ClassToken, conf: 0.95},
	"x session token":                 {class: ClassToken, conf: 0.95},
	"x refresh token":                 {class: ClassToken, conf: 0.95},
	"x goog api key":                  {class: ClassAPIKey, conf: 0.95},
	"ocp apim subscription key":       {class: ClassAPIKey, conf: 0.95},
	"x functions key":                 {class: ClassAPIKey, conf: 0.95},
	"private token":                   {class: ClassAPIKey, conf: 0.9},
	"job token":                       {class: ClassToken, conf: 0.85},
	"deploy token":                    {class: ClassAPIKey, conf: 0.9},
	"deploy key":                      {class: ClassPrivateKey, conf: 0.8},
	"runner token":                    {class: ClassAPIKey, conf: 0.9},
	"registration token":              {class: ClassAPIKey, conf: 0.85},
	"bot token":                       {class: ClassAPIKey, conf: 0.95},
	"webhook token":                   {class: ClassAPIKey, conf: 0.9},
	"webhook key":                     {class: ClassAPIKey, conf: 0.9},
	"integration key":                 {class: ClassAPIKey, conf: 0.85},
	"ingest key":                      {class: ClassAPIKey, conf: 0.85},
	"dsn password":                    {class: ClassPassword, conf: 0.9},
	"mysql pwd":                       {class: ClassPassword, conf: 0.95},
	"pgpassword":                      {class: ClassPassword, conf: 0.95},
	"postgres password":               {class: ClassPassword, conf: 0.95},
	"redis password":                  {class: ClassPassword, conf: 0.95},
	"mongo password":                  {class: ClassPassword, conf: 0.95},
	"rabbitmq password":               {class: ClassPassword, conf: 0.95},
	"broker password":                 {class: ClassPassword, conf: 0.95},
	"ftp password":                    {class: ClassPassword, conf: 0.95},
	"sftp password":                   {class: ClassPassword, conf: 0.95},
	"email password":                  {class: ClassPassword, conf: 0.95},
	"mail password":                   {class: ClassPassword, conf: 0.95},
	"app password":                    {class: ClassPassword, conf: 0.95},
	"application password":            {class: ClassPassword, conf: 0.95},
	"master password":                 {class: ClassPassword, conf: 0.95},
	"vault token":                     {class: ClassToken, conf: 0.95},
	"consul token":                    {class: ClassToken, conf: 0.95},
	"nomad token":                     {class: ClassToken, conf: 0.95},
	"kube token":                      {class: ClassToken, conf: 0.95},
	"service account token":           {class: ClassToken, conf: 0.95},
	"cluster token":                   {class: ClassToken, conf: 0.9},
	"join token":                      {class: ClassToken, conf: 0.9},
	"bootstrap token":                 {class: ClassToken, conf: 0.9},
	"node token":                      {class: ClassToken, conf: 0.85},
	"agent token":                     {class: ClassToken, conf: 0.9},
	"master token":                    {class: ClassToken, conf: 0.9},
	"root token":                      {class: ClassToken, conf: 0.95},
	"admin token":                     {class: ClassToken, conf: 0.95},
	"admin key":                       {class: ClassAPIKey, conf: 0.9},
	"admin secret":                    {class: ClassSecret, conf: 0.95},
	"root key":                        {class: ClassSecret, conf: 0.9},
	"unseal key":                      {class: ClassSecret, conf: 0.95},
	"recovery key":                    {class: ClassSecret, conf: 0.95},
	"backup key":                      {class: ClassSecret, conf: 0.85},
	"wrapping key":                    {class: ClassSecret, conf: 0.85},
	"symmetric key":                   {class: ClassSecret, conf: 0.9},
	"aes key":                         {class: ClassSecret, conf: 0.9},
	"des key":                         {class: ClassSecret, conf: 0.9},
	"cipher key":                      {class: ClassSecret, conf: 0.9},
	"crypto key":                      {class: ClassSecret, conf: 0.85},
	"secret token":                    {class: ClassSecret, conf: 0.95},
	"secret value":                    {class: ClassSecret, conf: 0.95},
	"secret string":                   {class: ClassSecret, conf: 0.95},
	"secret data":                     {class: ClassSecret, conf: 0.9},
	"secret text":                     {class: ClassSecret, conf: 0.9},
	"shared access signature":         {class: ClassCloudKey, conf: 0.9},
	"storage account key":             {class: ClassCloudKey, conf: 0.95},
	"primary connection string":       {class: ClassSecret, conf: 0.9},
	"secondary connection string":     {class: ClassSecret, conf: 0.9},
	"azure storage connection string": {class: ClassSecret, conf: 0.95},
	"aws secret access key":           {class: ClassCloudKey, conf: 0.95},
	"gcp service account key":         {class: ClassCloudKey, conf: 0.95},
	"google api key":                  {class: ClassCloudKey, conf: 0.95},
	"firebase api key":                {class: ClassCloudKey, conf: 0.8},
	"maps api key":                    {class: ClassCloudKey, conf: 0.8},
}

// negatingWords, right before a pattern, make the field about the secret
// rather than the secret itself: "has_password", "forgot_password_url".
var negatingWords = map[string]bool{
	"has": true, "have": true, "is": true, "requires": true, "require": true,
	"required": true, "needs": true, "need": true, "use": true, "uses": true,
	"show": true, "hide": true, "forgot": true, "forgotten": true, "enable": true,
	"enabled": true, "allow": true, "disable": true, "no": true, "without": true,
	"with": true, "count": true, "num": true, "max": true, "min": true, "total": true,
}

// idSuffixes may follow an idLike pattern.
var idSuffixes = map[string]bool{"number": true, "numbers": true, "no": true, "num": true, "nr": true, "nbr": true, "id": true, "code": true, "ref": true}

// continuations may follow any pattern without changing what the value is.
var continuations = map[string]bool{
	"value": true, "val": true, "hash": true, "hashed": true, "digest": true,
	"raw": true, "plain": true, "plaintext": true, "clear": true, "cleartext": true,
	"text": true, "txt": true, "str": true, "string": true, "enc": true,
	"encrypted": true, "crypt": true, "b64": true, "base64": true, "hex": true,
	"pem": true, "der": true, "data": true, "confirm": true, "confirmation": true,
	"repeat": true, "again": true, "new": true, "old": true, "current": true,
	"secret": true, "header": true, "json": true, "list": true,
}

// fieldIndex maps a pattern's concatenated words to its pattern.
var fieldIndex = func() map[string]fieldPattern {
	m := make(map[string]fieldPattern, len(fieldPatterns))
	for phrase, p := range fieldPatterns {
		key := strings.ReplaceAll(phrase, " ", "")
		if old, ok := m[key]; ok && old.conf >= p.conf {
			continue
		}
		m[key] = p
	}
	return m
}()

// maxPatternWords bounds the words a pattern spans.
const maxPatternWords = 5

// splitWords splits a field name into lower-case words.
func splitWords(name string) []string {
	var words []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	const (
		none = iota
		lower
		upper
		digit
	)
	prev := none
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		cls := none
		switch {
		case r >= 'a' && r <= 'z':
			cls = lower
		case r >= 'A' && r <= 'Z':
			cls = upper
		case r >= '0' && r <= '9':
			cls = digit
		case r >= utf8.RuneSelf && unicode.IsLetter(r):
			cls = lower
			if unicode.IsUpper(r) {
				cls = upper
			}
		}
		if cls == none {
			flush()
			prev = none
			i += size
			continue
		}
		switch {
		case cls == upper && (prev == lower || prev == digit):
			flush()
		case cls == digit && (prev == lower || prev == upper):
			flush()
		case cls != digit && prev == digit:
			flush()
		case cls == upper && prev == upper:
			// "APIKey": the K starts a word when a lower-case letter follows.
			if next, _ := utf8.DecodeRuneInString(name[i+size:]); i+size < len(name) && unicode.IsLower(next) {
				flush()
			}
		}
		cur = utf8.AppendRune(cur, unicode.ToLower(r))
		prev = cls
		i += size
	}
	flush()
	return words
}

// FieldMatch is what a field name says about its value.
type FieldMatch struct {
	Class      Class
	Confidence float64
}

// MatchField reports whether a field name (an object key, or a name before
// '=' or ':' in text) names sensitive data, and which.
func MatchField(name string) (FieldMatch, bool) {
	return matchWords(splitWords(name))
}

func matchWords(words []string) (FieldMatch, bool) {
	var (
		best    FieldMatch
		bestLen int
		buf     [64]byte
	)
	for i := range words {
		b := buf[:0]
		for j := i; j < len(words) && j-i < maxPatternWords; j++ {
			b = append(b, words[j]...)
			if len(b) > len(buf) {
				break
			}
			p, ok := fieldIndex[string(b)]
			if !ok || len(b) <= bestLen {
				continue
			}
			if i > 0 && (contains(p.notAfter, words[i-1]) || negatingWords[words[i-1]]) {
				continue
			}
			if !harmlessTail(words[j+1:], p.idLike) {
				continue
			}
			best, bestLen = FieldMatch{Class: p.class, Confidence: p.conf}, len(b)
		}
	}
	return best, bestLen > 0
}

func harmlessTail(tail []string, idLike bool) bool {
	for _, w := range tail {
		switch {
		case continuations[w], idLike && idSuffixes[w], allDigits(w):
		default:
			return false
		}
	}
	return true
}

func contains(list []string, w string) bool {
	for _, x := range list {
		if x == w {
			return true
		}
	}
	return false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// normalizeField returns the words of a field name joined by '_', the form
// in which allow-listed fields are compared.
func normalizeField(name string) string {
	return strings.Join(splitWords(name), "_")
}
