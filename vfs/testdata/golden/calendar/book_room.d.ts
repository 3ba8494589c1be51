declare namespace calendar {
  /** Find and book a free meeting room for a time slot, by capacity and equipment. */
  function book_room(args: BookRoomArgs): Promise<BookRoomResult>;
  interface BookRoomArgs {
    /** @format date-time */
    start: string;
    /** @format date-time */
    end: string;
    /** @default 2 @minimum 1 @maximum 500 */
    min_capacity?: number;
    building?: string;
    /** @uniqueItems */
    equipment?: ("display" | "video" | "whiteboard" | "phone")[];
    event_id?: string;
  }
  interface BookRoomResult {
    room: {
      id: string;
      name: string;
      capacity: number;
      building?: string;
    };
    event_id?: string | null;
  }
}
